"""A newcomer's first real corpus: a folder of man pages (rendered to text, several chunks
each), `poolq enqueue DIR --wait` with default settings against a fresh worker, and the README's
one-document snippet started while the folder is being ingested.

Prints the folder's time and result line, the small job's wait, the load and the CPU time
stolen by other tenants; exits non-zero when the enqueue fails, a document is missing, the small
job waits more than ``--small-limit-s``, or the worker reaped itself.

    python benchmarks/newcomer_run.py --docs 500
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from poolq.sinks.store.edge import EdgeStore
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.audit import audit_collection

MAN_DIR = Path("/usr/share/man/man1")
SNIPPET = """
import asyncio, os, time
from poolq import PoolqClient
docs = [{"id": "small-1", "text": "Redis is in-memory.", "metadata": {"lang": "en"}}]
async def main():
    async with PoolqClient(os.environ["POOLQ_REDIS_URL"]) as client:
        t0 = time.monotonic()
        ids = await client.enqueue("man", docs, job_size=32)
        outcomes = await client.wait(ids)
        print(f"small job {outcomes[0].status} after {time.monotonic() - t0:.1f}s")
asyncio.run(main())
"""


def steal_s() -> float:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def render(page: Path) -> str:
    """A man page as plain text (``man`` when present, else roff requests stripped)."""
    try:
        out = subprocess.run(
            ["man", "-l", "-P", "cat", str(page)],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "0"},
        ).stdout
        return re.sub(r".\x08", "", out)
    except (OSError, subprocess.TimeoutExpired):
        raw = gzip.decompress(page.read_bytes()).decode("utf-8", "replace")
        return "\n".join(ln for ln in raw.splitlines() if not ln.startswith((".", "'\\\"")))


def build_corpus(folder: Path, n: int, min_chars: int = 4000, max_chars: int = 60_000) -> int:
    """``n`` man pages of several chunks each, as .txt files; returns their total bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for page in sorted(MAN_DIR.glob("*.gz")):
        if len(list(folder.iterdir())) >= n:
            break
        text = render(page)
        if min_chars <= len(text) <= max_chars:
            (folder / (page.name.removesuffix(".gz") + ".txt")).write_text(text)
            total += len(text.encode())
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument("--small-after-s", type=float, default=20.0)
    ap.add_argument("--small-limit-s", type=float, default=60.0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="poolq-newcomer-"))
    corpus = tmp / "corpus"
    size = build_corpus(corpus, args.docs)
    n = len(list(corpus.iterdir()))
    print(f"corpus: {n} man pages, {size / 1e6:.1f} MB of text")
    failures = []
    with LocalRedis(tmp / "redis") as redis_server:
        env = {**os.environ, "POOLQ_REDIS_URL": redis_server.url}
        log = tmp / "worker.log"
        with WorkerProcess(redis_server.url, tmp / "qdrant", log=log):
            load0, stolen0, t0 = os.getloadavg()[0], steal_s(), time.monotonic()
            command = ["enqueue", str(corpus), "--collection", "man", "--wait"]
            enqueue = subprocess.Popen(
                [sys.executable, "-m", "poolq.worker", *command],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            time.sleep(args.small_after_s)
            small = subprocess.run(
                [sys.executable, "-c", SNIPPET], env=env, capture_output=True, text=True
            )
            small_line = (small.stdout or small.stderr).strip().splitlines()[-1:]
            out, _ = enqueue.communicate()
            took = time.monotonic() - t0
            print(f"enqueue --wait: exit {enqueue.returncode} after {took:.1f}s")
            print("  " + "\n  ".join(out.strip().splitlines()[-3:]))
            print(f"small job (started {args.small_after_s:.0f}s in): {' '.join(small_line)}")
            print(
                f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}, "
                f"CPU stolen {steal_s() - stolen0:.1f}s"
            )
        store = EdgeStore(tmp / "qdrant")
        try:
            audit = audit_collection(store, "man")
        finally:
            store.close()
        print(f"store: {len(audit.documents)} documents, {audit.points} points")
        text = log.read_text()
    if enqueue.returncode != 0:
        failures.append(f"enqueue exited {enqueue.returncode}")
    if len(audit.documents) != n + 1 or audit.problems():
        failures.append(f"store holds {len(audit.documents)} of {n + 1} documents")
    m = re.search(r"after ([\d.]+)s", " ".join(small_line))
    if small.returncode != 0 or m is None or float(m.group(1)) > args.small_limit_s:
        failures.append(f"small job: {small_line}")
    if "has no heartbeat" in text:
        failures.append("the worker reaped a live worker")
    print("MISS: " + "; ".join(failures) if failures else "ok")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
