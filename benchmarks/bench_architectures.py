"""The models people deploy, whole process: ``poolq encode`` vs sentence-transformers, same corpus.

For each architecture a random-initialised checkpoint is built in its real sentence-transformers
layout (``tests/decoder_checkpoints.py``, ``tests/encoder_checkpoints.py``):

- ``qwen3``, ``mistral``: hidden 384, 6 layers, GQA 6/2, last-token pooling, normalize (task
  ``embed``; peer ``SentenceTransformer``);
- ``distilbert-splade``: ``DistilBertForMaskedLM``, hidden 384, 6 layers, MLMTransformer ->
  SpladePooling(max) (task ``sparse``; peer ``SparseEncoder`` on the same folder);
- ``modernbert``: hidden 384, 6 layers, local window 128, a global layer every 3, mean pooling,
  normalize (task ``embed``; peer ``SentenceTransformer``).

First both peers encode 48 passages and their outputs are compared (dense: min cosine >= 0.9999;
sparse: max |weight difference| <= 1e-3 and how many texts have identical non-zero sets); a
mismatch stops there. Then both run as a user runs them, a fresh process each, interleaved
rounds, best of each:

- poolq: ``poolq encode CORPUS --model DIR --task T -o OUT.jsonl`` (packed, padding-free);
- sentence-transformers: ``benchmarks/peer_run.py st|st-sparse`` (``encode``, batch 32).

Printed per run: wall seconds, peak RSS (``wait4``), the 1-minute load average and the CPU steal
over the run (``/proc/stat``). Then the timed outputs compared again, the ratio
sentence-transformers / poolq, and one text far over the batch budget (``--no-truncate``):
decoders prefill it in chunks of ``--max-batch-tokens 512``; encoders (no chunked prefill) take a
text near their max length under a quarter of it as budget, run alone. Its peak RSS is printed
beside the corpus run's. Exit 1 when outputs differ or (unless ``--no-targets``) a ratio is under
``TARGET``.

    python benchmarks/bench_architectures.py [--arch qwen3 --arch modernbert ...] [--docs 1080]
        [--rounds 2] [--no-targets]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procs import cpu_counters, steal_pct  # noqa: E402

TARGET = 1.3  # sentence-transformers seconds / poolq seconds, whole process
CHECK_DOCS = 48  # passages compared before anything is timed
DENSE_COS_MIN = 0.9999
SPARSE_DIFF_MAX = 1e-3
VOCAB = 30522
DECODERS = ("qwen3", "mistral")  # causal: a text over the budget is prefilled in chunks
# name -> (poolq task, peer_run.py peer, the checkpoint's max sequence length)
ARCHS = {
    "qwen3": ("embed", "st", 4096),
    "mistral": ("embed", "st", 4096),
    "distilbert-splade": ("sparse", "st-sparse", 512),
    "modernbert": ("embed", "st", 8192),
}


def build(arch: str, folder: Path) -> Path:
    if arch in DECODERS:
        from tests.decoder_checkpoints import build_decoder

        return build_decoder(folder, arch, hidden=384, layers=6, heads=6, kv_heads=2)
    from tests.encoder_checkpoints import build_modernbert, build_splade_distilbert

    if arch == "distilbert-splade":
        return build_splade_distilbert(folder, hidden=384, layers=6, heads=6)
    return build_modernbert(folder, hidden=384, layers=6, heads=6, pooling="mean")


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB, stdout of one whole process."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        dt = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err.read()[-3000:]}")
        return dt, usage.ru_maxrss / 1024, out.read()


def conditions(before: tuple[int, int]) -> str:
    return f"load {os.getloadavg()[0]:.2f}, steal {steal_pct(before, cpu_counters()):.1f}%"


def corpus(n: int) -> list[str]:
    from poolq.ingest.sample_corpus import passages

    texts = passages(max(n, 100))
    return (texts * (n // len(texts) + 1))[:n]


def write_jsonl(path: Path, texts: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))


def poolq_outputs(path: Path, task: str) -> np.ndarray:
    """``[n, d]`` dense vectors or ``[n, VOCAB]`` sparse weights, in id order."""
    rows = sorted(
        (json.loads(line) for line in path.read_text().splitlines()), key=lambda r: r["id"]
    )
    if task == "embed":
        return np.asarray([r["embed"] for r in rows], dtype=np.float32)
    w = np.zeros((len(rows), VOCAB), dtype=np.float32)
    for i, r in enumerate(rows):
        w[i, r["sparse"]["indices"]] = r["sparse"]["values"]
    return w


def peer_outputs(out: Path, task: str) -> np.ndarray:
    if task == "embed":
        return np.load(out.with_suffix(".npy"))
    z = np.load(out.with_suffix(".npz"))
    w = np.zeros((int(z["n"]), VOCAB), dtype=np.float32)
    w[z["row"], z["col"]] = z["val"]
    return w


def agreement(ours: np.ndarray, ref: np.ndarray, task: str) -> tuple[bool, str]:
    if ours.shape != ref.shape:
        return False, f"shapes differ: poolq {ours.shape}, sentence-transformers {ref.shape}"
    if task == "embed":
        cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
        return bool(cos.min() >= DENSE_COS_MIN), f"min cosine {cos.min():.6f}"
    same = int(((ours > 0) == (ref > 0)).all(1).sum())
    diff = float(np.abs(ours - ref).max())
    nnz = float((ref > 0).sum(1).mean())
    ok = diff <= SPARSE_DIFF_MAX and nnz > 0
    return (
        ok,
        f"identical non-zero sets {same}/{len(ref)}, max |dw| {diff:.2e}, {nnz:.0f} terms/text",
    )


def long_text(folder: Path, tokens: int) -> str:
    """About ``tokens`` tokens (special tokens included), never more."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()  # tokenizer.json may carry the model's max length
    phrases = [f"w{i} the quick brown fox" for i in range(tokens // 5)]
    while len(tok.encode(" ".join(phrases)).ids) > tokens:
        phrases = phrases[: int(len(phrases) * 0.97)]
    return " ".join(phrases)


def bench(arch: str, args: argparse.Namespace, tmp: Path) -> bool:
    task, peer, max_len = ARCHS[arch]
    folder = build(arch, tmp / arch)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "HF_HUB_OFFLINE": "1"}
    env["TOKENIZERS_PARALLELISM"] = "false"

    def commands(data: Path, tag: str) -> tuple[list[str], list[str]]:
        poolq = [str(Path(sys.executable).parent / "poolq"), "encode", str(data), "--model"]
        poolq += [
            str(folder),
            "--task",
            task,
            "--dtype",
            "float32",
            "-o",
            str(tmp / f"{tag}.jsonl"),
        ]
        st = [sys.executable, str(ROOT / "benchmarks" / "peer_run.py"), peer, str(data)]
        st += [str(tmp / f"{tag}-st"), "--model", str(folder), "--threads", str(args.threads)]
        return poolq, [*st, "--max-length", str(min(max_len, 4096))]

    texts = corpus(args.docs)
    write_jsonl(tmp / "check-in.jsonl", texts[:CHECK_DOCS])
    for cmd in commands(tmp / "check-in.jsonl", "check"):
        run(cmd, env)
    ok, how = agreement(
        poolq_outputs(tmp / "check.jsonl", task), peer_outputs(tmp / "check-st", task), task
    )
    n_check = min(CHECK_DOCS, len(texts))
    print(f"{arch}: {n_check} passages before timing: {how} {'ok' if ok else 'DIFFER'}")
    if not ok:
        return False

    write_jsonl(tmp / "corpus-in.jsonl", texts)
    poolq_cmd, st_cmd = commands(tmp / "corpus-in.jsonl", "poolq")
    best = {"poolq": float("inf"), "st": float("inf")}
    peak = {"poolq": 0.0, "st": 0.0}
    for r in range(args.rounds):
        for name, cmd in (("poolq", poolq_cmd), ("st", st_cmd)):
            before = cpu_counters()
            dt, rss, _ = run(cmd, env)
            best[name], peak[name] = min(best[name], dt), max(peak[name], rss)
            print(
                f"{arch} round {r + 1}: {name:5s} {dt:7.2f}s  peak {rss:6.0f} MiB  ({conditions(before)})"
            )
    ok, how = agreement(
        poolq_outputs(tmp / "poolq.jsonl", task), peer_outputs(tmp / "poolq-st", task), task
    )
    ratio = best["st"] / best["poolq"]
    print(
        f"{arch} ({task}): {args.docs} passages, {args.threads} threads; poolq {best['poolq']:.2f}s "
        f"(peak {peak['poolq']:.0f} MiB), sentence-transformers {best['st']:.2f}s (peak "
        f"{peak['st']:.0f} MiB): {ratio:.2f}x (target >= {TARGET}) "
        f"{'ok' if ratio >= TARGET else 'MISS'}; {how} {'ok' if ok else 'DIFFER'}"
    )

    n_long = min(args.long_tokens, max_len - 8)
    budget = 512 if max_len > args.long_tokens else max(n_long // 4, 16)
    write_jsonl(tmp / "long-in.jsonl", [long_text(folder, n_long)])
    long_cmd, _ = commands(tmp / "long-in.jsonl", "long")
    long_cmd += ["--max-batch-tokens", str(budget), "--no-truncate"]
    before = cpu_counters()
    dt, rss, _ = run(long_cmd, env)
    written = len((tmp / "long.jsonl").read_text().splitlines())
    how_long = "prefilled in chunks" if arch in DECODERS else "encoder: run alone"
    print(
        f"{arch}: one ~{n_long}-token text, --max-batch-tokens {budget} --no-truncate ({how_long}): "
        f"{written} written in {dt:.2f}s, peak {rss:.0f} MiB (corpus run: {peak['poolq']:.0f} MiB) "
        f"({conditions(before)})"
    )
    return ok and written == 1 and (ratio >= TARGET or args.no_targets)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--arch", action="append", choices=sorted(ARCHS), help="repeat; default all")
    ap.add_argument("--docs", type=int, default=1080)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--long-tokens", type=int, default=4000)
    ap.add_argument("--no-targets", action="store_true", help="print the ratios, exit 0 on a miss")
    args = ap.parse_args()
    ok = True
    for arch in args.arch or list(ARCHS):
        with tempfile.TemporaryDirectory(prefix=f"poolq-{arch}-") as tmp:
            ok &= bench(arch, args, Path(tmp))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
