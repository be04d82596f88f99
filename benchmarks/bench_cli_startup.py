"""Start-up time of the client commands against the worker's.

Client commands (enqueue, status, search, dlq, reindex) never import torch, transformers or
qdrant_client; ``poolq worker`` must. Each command runs as a user runs it (a fresh process:
``python -m poolq.worker ...``), best of ``--repeat`` runs: ``--help`` for each command, plus
``status`` and ``dlq list`` answered by a real local Redis. The peer, measured in the same run,
is ``poolq worker --help`` and the worker's own imports (what ``poolq worker`` loads before it
can start: the arq app, the engine, torch, the Qdrant client).

Exits non-zero when a client command takes more than half the worker's import time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from poolq.worker.dev.local_redis import LocalRedis

CLI = [sys.executable, "-m", "poolq.worker"]


def best_of(cmd: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, timeout=300)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalRedis(Path(tmp) / "redis") as redis:
        url = ["--redis-url", redis.url]
        client = {
            "enqueue --help": [*CLI, "enqueue", "--help"],
            "status --help": [*CLI, "status", "--help"],
            "search --help": [*CLI, "search", "--help"],
            "dlq --help": [*CLI, "dlq", "--help"],
            "reindex --help": [*CLI, "reindex", "--help"],
            "status (Redis)": [*CLI, "status", *url],
            "dlq list (Redis)": [*CLI, "dlq", "list", *url],
        }
        peers = {
            "worker --help": [*CLI, "worker", "--help"],
            "worker imports": [sys.executable, "-c", "import poolq.worker.app.worker_settings"],
        }
        times = {name: best_of(cmd, args.repeat) for name, cmd in {**client, **peers}.items()}
    ref = times["worker imports"]
    print(f"{'command':24s} {'best s':>8s} {'vs worker imports':>18s}")
    misses = []
    for name, s in times.items():
        print(f"{name:24s} {s:8.3f} {s / ref:17.2f}x")
        if name in client and s > 0.5 * ref:
            misses.append(name)
    for name in misses:
        print(f"MISS: {name} takes more than half the worker's import time")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
