"""poolq against the engines a CPU user would pick, whole process, interleaved, same truncation.

Every peer runs as a fresh process on the same JSONL corpus (~1,080 standard-library passages)
with 2 threads: ``poolq encode`` (fp32 and ``--dtype int8``), sentence-transformers (torch
fp32; ``SparseEncoder`` for SPLADE), ONNX Runtime dynamic int8 (avx512_vnni settings), OpenVINO
static int8 (NNCF, calibrated on other passages), fastembed int8 ONNX through its custom-model
API (truncation 256, and 128: its default for this model from its own registry). Peer models are
built at run time from the bundled folders (``peer_models.py``). Rounds are interleaved (peer
order rotates) and each figure is the best of ``--rounds``; each run waits for other users' CPU
load to drop first and the CPU pressure at its start is printed. One-text runs of each peer give
start-up. Quality: cosine (dense) or top-32 overlap / weight error (sparse) against
sentence-transformers fp32.

With openvino installed, ``poolq encode --backend openvino`` runs too ("poolq-ov ..."; its
converted models are cached under the work folder and warmed by one untimed run first, as a
worker's second start finds them), beside raw OpenVINO fp32 peers (the fp32 ONNX compiled
with OpenVINO's defaults, which run bf16 on a CPU with AMX or avx512_bf16, and pinned to f32
inference: ``peer_run_f32.py``; poolq's fp32 is f32, it must match torch), and the ``mixed`` task: one model serving embed + sparse + token_embed from one forward
(a BGE-M3-layout head pair on MiniLM, ``tests/models.build_multi_head``), torch vs openvino.

Targets (exit 1 on a miss): dense int8 >= 1.3x the fastest int8 peer at equal truncation; dense
fp32 >= 1.5x sentence-transformers; SPLADE int8 >= 4x sentence-transformers' SparseEncoder.
The OpenVINO backend's: dense int8 >= 1.0x raw OpenVINO int8; dense fp32 >= 1.2x raw
OpenVINO fp32 (the f32 peer when it ran); SPLADE int8 (the faster poolq backend) >= 1.5x the best int8 SPLADE peer; mixed
tasks faster than the torch backend.

    python benchmarks/bench_cpu_peers.py [--rounds 2] [--limit 1080] [--work DIR]
                                         [--task all|dense|sparse|mixed] [--only NAME ...]
                                         [--baseline TREE [--after TREE]]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from benchmarks.cpu_peers_list import peers, with_baseline
from benchmarks.cpu_peers_report import load_steal, load_vectors, ov_checks, quality
from benchmarks.peer_models import build_all
from benchmarks.procs import pressure_avg10, run_s, wait_quiet
from poolq.ingest.sample_corpus import passages
from tests.models import build_multi_head, minilm_path, splade_path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--limit", type=int, default=1080)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=None, help="keep artifacts here (default: temp)")
    ap.add_argument("--max-wait", type=float, default=120, help="seconds to wait for a quiet CPU")
    ap.add_argument(
        "--task",
        choices=["all", "dense", "sparse", "mixed"],
        default="all",
        help="peers of one task only",
    )
    ap.add_argument(
        "--only", nargs="*", default=None, help="only the peers whose name holds one of these"
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="also run each selected poolq peer from this source tree (a git worktree of an "
        "earlier commit) and from this checkout, through tree_launch.py: before / after",
    )
    ap.add_argument(
        "--after", type=Path, default=None, help="with --baseline: the tree after (default: this)"
    )
    args = ap.parse_args()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": str(args.threads),
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        work = args.work or Path(tmp_name)
        arts = build_all(minilm_path(), splade_path(), work / "peers", (256, 128))
        arts["multi-head"] = str(build_multi_head(work / "multi-head"))
        env["POOLQ_CACHE_DIR"] = str(work / "poolq-cache")  # converted models, warmed below
        corpus, one = work / "corpus.jsonl", work / "one.jsonl"
        corpus.write_text(
            "".join(
                json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(passages(args.limit))
            )
        )
        one.write_text(json.dumps({"id": 0, "text": "hello world"}) + "\n")
        refs = {"dense": "ST torch fp32", "sparse": "ST SparseEncoder fp32"}
        refs["mixed"] = "poolq float32 mixed"
        todo = [p for p in peers(arts, args.threads) if args.task in ("all", p.task)]
        if args.only:
            keep = set(args.only)
            todo = [p for p in todo if any(k in p.name for k in keep)]  # refs: name them
        if args.baseline is not None:
            after = args.after.resolve() if args.after else None
            todo = with_baseline(todo, args.baseline.resolve(), after)
        for p in todo:  # converted / quantized once, as a worker's first start does
            if p.name.startswith("poolq-ov"):
                run_s(p.argv(one, work / "one-out"), env)
        print(f"load/steal at start: {load_steal()}")
        best = {p.name: float("inf") for p in todo}
        start = {p.name: float("inf") for p in todo}
        seen_pressure: dict[str, float] = {}
        lines: list[str] = []
        failed: dict[str, str] = {}
        for r in range(args.rounds):
            order = todo[r % len(todo) :] + todo[: r % len(todo)]
            for p in order:
                wait_quiet(max_wait_s=args.max_wait)
                pressure = pressure_avg10()
                if p.name in failed:
                    continue
                lines.append(f"round {r} {p.name}: {load_steal()}")
                try:
                    s = run_s(p.argv(corpus, work / f"out-{p.name.replace(' ', '_')}"), env)
                except RuntimeError as exc:  # e.g. an int8 gate refusing on a CPU without VNNI
                    failed[p.name] = str(exc).splitlines()[-1][-300:]
                    continue
                if s < best[p.name]:
                    best[p.name], seen_pressure[p.name] = s, pressure
                wait_quiet(max_wait_s=args.max_wait)
                start[p.name] = min(start[p.name], run_s(p.argv(one, work / "one-out"), env))
        for name, why in failed.items():
            print(f"{name}: FAILED: {why}")
        todo = [p for p in todo if p.name not in failed]
        for name in failed:
            best.pop(name)
        vectors = {
            p.name: load_vectors(work / f"out-{p.name.replace(' ', '_')}", p.task) for p in todo
        }
    print(
        f"{args.limit} passages, {args.threads} threads, best of {args.rounds} interleaved rounds, whole process\n"
    )
    print(
        f"{'peer':38s} {'trunc':>5s} {'s':>7s} {'vs ST':>6s} {'1-text s':>8s} {'PSI%':>5s}  quality vs sentence-transformers fp32"
    )
    for p in todo:
        ref = refs[p.task]
        if ref not in best:  # --only without the reference
            versus, q = "    - ", "-"
        else:
            versus = f"{best[ref] / best[p.name]:5.2f}x"
            q = "(reference)" if p.name == ref else quality(vectors[p.name], vectors[ref], p.task)
        print(
            f"{p.name:38s} {p.truncation:5d} {best[p.name]:7.2f} {versus} "
            f"{start[p.name]:8.2f} {seen_pressure[p.name]:5.1f}  {q}"
        )
    print(f"load/steal at the end: {load_steal()}")
    if os.environ.get("BENCH_VERBOSE"):
        print("\n".join(lines))
    misses = []
    checks = []
    have = set(best)
    if args.task in ("all", "dense") and {"poolq int8", "ST torch fp32"} <= have:
        int8_peers = [
            p
            for p in todo
            if p.task == "dense"
            and p.int8
            and not p.name.startswith("poolq")
            and p.truncation == 256
        ]
        fastest = min(int8_peers, key=lambda p: best[p.name]) if int8_peers else None
        if fastest is not None:
            checks.append(
                (
                    "dense int8 vs fastest int8 peer at 256 (" + fastest.name + ")",
                    best[fastest.name] / best["poolq int8"],
                    1.3,
                )
            )
        checks.append(
            (
                "dense fp32 vs sentence-transformers",
                best["ST torch fp32"] / best["poolq float32"],
                1.5,
            )
        )
    if args.task in ("all", "sparse") and {"poolq int8 SPLADE", "ST SparseEncoder fp32"} <= have:
        checks.append(
            (
                "SPLADE int8 vs SparseEncoder",
                best["ST SparseEncoder fp32"] / best["poolq int8 SPLADE"],
                4.0,
            )
        )
    checks += ov_checks(best)
    print()
    for name, ratio, target in checks:
        ok = ratio >= target
        print(f"{name}: {ratio:.2f}x (target {target}x) {'ok' if ok else 'MISS'}")
        if not ok:
            misses.append(name)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
