"""Start-up as a user pays it: a fresh process from ``exec`` to its first useful output.

* ``poolq encode`` of one text (MiniLM, and SPLADE-tiny): time to the first output line;
* ``poolq worker`` (default profile: MiniLM + SPLADE-tiny) against a local Redis and an embedded
  Qdrant: time to its "ready" log line (models loaded, engines started, writer open);
* peers, measured in the same run and interleaved: sentence-transformers loading the same
  folders and encoding one text (``SentenceTransformer``; ``SparseEncoder`` for SPLADE), and a
  bare ``import torch`` (the floor every torch-based command pays).

Each row is the best of ``--repeat`` interleaved rounds. Exits non-zero when ``poolq encode``
(MiniLM) is not at least ``--target`` times faster than sentence-transformers.

    python benchmarks/bench_startup.py [--repeat 3] [--target 1.5] [--baseline DIR]

``--baseline DIR``: also run another version of poolq, interleaved (DIR on ``PYTHONPATH``
holding a ``poolq`` package laid out as installed, e.g. links into ``git archive`` of an older
commit), for before/after figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.procs import cpu_pressure, first_line_s, line_on_stderr_s, wait_quiet
from tests.models import minilm_path, splade_path

PY = sys.executable
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

ST_DENSE = (
    "from sentence_transformers import SentenceTransformer as S;"
    "m=S({p!r},device='cpu');print(m.encode(['hello world'])[0][:2])"
)
ST_SPARSE = (
    "from sentence_transformers import SparseEncoder as S;"
    "from sentence_transformers.sparse_encoder.modules import MLMTransformer as M, SpladePooling as P;"
    "m=S(modules=[M({p!r}),P(pooling_strategy='max')],device='cpu');"
    "print(m.encode(['hello world'])[0].coalesce().values()[:2])"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target", type=float, default=1.5)
    ap.add_argument("--baseline", type=Path, default=None)
    args = ap.parse_args()
    base_env = {**ENV, "PYTHONPATH": str(args.baseline)} if args.baseline else None
    minilm, splade = str(minilm_path()), str(splade_path())
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "one.jsonl"
        one.write_text(json.dumps({"id": 1, "text": "hello world"}) + "\n")
        cli = [PY, "-m", "poolq.worker"]
        rows: dict[str, list[str]] = {
            "import torch": [PY, "-c", "import torch; print(1)"],
            "poolq encode (MiniLM)": [*cli, "encode", "--model", minilm, str(one)],
            "poolq encode int8 (MiniLM)": [
                *cli,
                "encode",
                "--model",
                minilm,
                "--dtype",
                "int8",
                str(one),
            ],
            "ST SentenceTransformer": [PY, "-c", ST_DENSE.format(p=minilm)],
            "poolq encode (SPLADE)": [
                *cli,
                "encode",
                "--model",
                splade,
                "--task",
                "sparse",
                str(one),
            ],
            "ST SparseEncoder": [PY, "-c", ST_SPARSE.format(p=splade)],
        }
        best: dict[str, float] = {}

        def keep(name: str, s: float) -> None:
            best[name] = min(best.get(name, float("inf")), s)

        for _ in range(args.repeat):
            for name, cmd in rows.items():
                wait_quiet()
                keep(name, first_line_s(cmd, ENV))
                if base_env is not None and name.startswith("poolq encode") and "int8" not in name:
                    wait_quiet()
                    keep(f"{name} BEFORE", first_line_s(cmd, base_env))
            wait_quiet()
            keep("poolq worker ready", _worker_ready_s(Path(tmp), ENV))
            if base_env is not None:
                wait_quiet()
                keep("poolq worker ready BEFORE", _worker_ready_s(Path(tmp), base_env))
    st_both = best["ST SentenceTransformer"] + best["ST SparseEncoder"]
    print(
        f"load average {os.getloadavg()[0]:.2f}, CPU pressure {cpu_pressure()}; best of "
        f"{args.repeat} interleaved rounds (each run waits for a quiet CPU)\n"
    )
    print(f"{'process':28s} {'s to first output':>18s}")
    for name, s in best.items():
        print(f"{name:28s} {s:18.2f}")
    dense_ratio = best["ST SentenceTransformer"] / best["poolq encode (MiniLM)"]
    sparse_ratio = best["ST SparseEncoder"] / best["poolq encode (SPLADE)"]
    worker_ratio = st_both / best["poolq worker ready"]
    print(
        f"\nST / poolq encode: MiniLM {dense_ratio:.2f}x, SPLADE {sparse_ratio:.2f}x; "
        f"(ST MiniLM + ST SPLADE) / poolq worker ready: {worker_ratio:.2f}x"
    )
    if dense_ratio < args.target:
        print(f"MISS: poolq encode start-up {dense_ratio:.2f}x < {args.target}x", file=sys.stderr)
        return 1
    return 0


def _worker_ready_s(tmp: Path, env: dict[str, str]) -> float:
    from poolq.worker.dev.local_redis import LocalRedis

    with LocalRedis(tmp / f"redis-{time.monotonic_ns()}") as redis:
        cmd = [
            PY,
            "-m",
            "poolq.worker",
            "worker",
            "--redis-url",
            redis.url,
            "--qdrant-path",
            str(tmp / f"qdrant-{time.monotonic_ns()}"),
        ]
        return line_on_stderr_s(cmd, env, " ready: ")


if __name__ == "__main__":
    sys.exit(main())
