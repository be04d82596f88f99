"""New architectures, whole process: ``poolq encode`` vs sentence-transformers on the same corpus.

For each architecture a random-initialised checkpoint is built in its real sentence-transformers
layout (qwen3: hidden 384, 6 layers, GQA 6/2, last-token pooling, normalize; the issue's setup),
then both peers run as a user runs them, a fresh process each, interleaved rounds, best of each:

- poolq: ``poolq encode CORPUS --model DIR -o OUT.jsonl`` (packed, padding-free, chunked prefill);
- sentence-transformers: ``benchmarks/peer_run.py st`` (``SentenceTransformer.encode``, batch 32).

Printed per run: wall seconds, peak RSS (``wait4``), the 1-minute load average and the CPU time
stolen by other tenants (``/proc/stat``). Then the outputs' min cosine, the ratio
sentence-transformers / poolq, and a text far over the batch budget (``--long-tokens`` with
``--max-batch-tokens 512``): encoded, with its peak RSS beside the corpus run's. Exit 1 when a
ratio is under ``TARGET`` or the outputs differ.

    python benchmarks/bench_architectures.py [--arch qwen3] [--docs 1080] [--rounds 2]
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

TARGET = 1.3  # sentence-transformers seconds / poolq seconds, whole process
ARCHS = {  # name -> (model_type, build_decoder keyword arguments)
    "qwen3": ("qwen3", dict(hidden=384, layers=6, heads=6, kv_heads=2)),
    "mistral": ("mistral", dict(hidden=384, layers=6, heads=6, kv_heads=2)),
}


def steal_s() -> float:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


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


def conditions(stolen_before: float) -> str:
    return f"load {os.getloadavg()[0]:.2f}, stolen {steal_s() - stolen_before:.1f}s"


def corpus(n: int) -> list[str]:
    from poolq.ingest.sample_corpus import passages

    texts = passages(max(n, 100))
    return (texts * (n // len(texts) + 1))[:n]


def write_jsonl(path: Path, texts: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))


def poolq_vectors(path: Path) -> np.ndarray:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return np.asarray([r["embed"] for r in sorted(rows, key=lambda r: r["id"])], dtype=np.float32)


def bench(arch: str, docs: int, rounds: int, threads: int, long_tokens: int, tmp: Path) -> bool:
    from tests.decoder_checkpoints import build_decoder

    model_type, kw = ARCHS[arch]
    folder = build_decoder(tmp / arch, model_type, **kw)  # type: ignore[arg-type]
    texts = corpus(docs)
    data = tmp / "corpus.jsonl"
    write_jsonl(data, texts)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    env["TOKENIZERS_PARALLELISM"] = "false"
    poolq_cmd = [str(Path(sys.executable).parent / "poolq"), "encode", str(data), "--model"]
    poolq_cmd += [str(folder), "--dtype", "float32", "-o", str(tmp / "poolq.jsonl")]
    st_cmd = [sys.executable, str(ROOT / "benchmarks" / "peer_run.py"), "st", str(data)]
    st_cmd += [str(tmp / "st"), "--model", str(folder), "--threads", str(threads)]
    st_cmd += ["--max-length", "4096"]
    best = {"poolq": float("inf"), "st": float("inf")}
    peak = {"poolq": 0.0, "st": 0.0}
    for r in range(rounds):
        for name, cmd in (("poolq", poolq_cmd), ("st", st_cmd)):
            stolen = steal_s()
            dt, rss, _ = run(cmd, env)
            best[name], peak[name] = min(best[name], dt), max(peak[name], rss)
            print(
                f"{arch} round {r + 1}: {name:5s} {dt:7.2f}s  peak {rss:6.0f} MiB  ({conditions(stolen)})"
            )
    ours, ref = poolq_vectors(tmp / "poolq.jsonl"), np.load(tmp / "st.npy")
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    ratio = best["st"] / best["poolq"]
    print(
        f"{arch}: {docs} passages, {threads} threads; poolq {best['poolq']:.2f}s, "
        f"sentence-transformers {best['st']:.2f}s: {ratio:.2f}x (target >= {TARGET}) "
        f"{'ok' if ratio >= TARGET else 'MISS'}; min cosine {cos.min():.6f}"
    )
    long_text = " ".join(f"w{i} the quick brown fox" for i in range(long_tokens // 7))
    write_jsonl(tmp / "long.jsonl", [long_text])
    long_cmd = [*poolq_cmd[:2], str(tmp / "long.jsonl"), *poolq_cmd[3:]]
    long_cmd += ["--max-batch-tokens", "512", "--no-truncate"]
    stolen = steal_s()
    dt, rss, _ = run(long_cmd, env)
    written = len((tmp / "poolq.jsonl").read_text().splitlines())
    print(
        f"{arch}: one ~{long_tokens}-token text, --max-batch-tokens 512 --no-truncate: "
        f"{written} written in {dt:.2f}s, peak {rss:.0f} MiB (corpus run: {peak['poolq']:.0f} MiB) "
        f"({conditions(stolen)})"
    )
    return ratio >= TARGET and cos.min() >= 0.9999 and written == 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", action="append", choices=sorted(ARCHS))
    ap.add_argument("--docs", type=int, default=1080)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--long-tokens", type=int, default=4000)
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="poolq-arch-") as tmp:
        for arch in args.arch or ["qwen3"]:
            ok &= bench(arch, args.docs, args.rounds, args.threads, args.long_tokens, Path(tmp))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
