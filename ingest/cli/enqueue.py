"""``poolq enqueue``: documents from a JSONL file, the files of a folder (PDF, HTML, DOCX,
PPTX, EPUB, Markdown, text: parsed by the workers), the objects of a bucket's prefix or a file of
URLs (``enqueue_uris.py``: fetched by the workers), as jobs.

Everything is checked before anything is enqueued: ``--job-size`` against the workers' limit of
documents per job, each document against a worker's rules and size limit (what fails is
reported with its file and line, and not sent; the rest are). Jobs are split to fit the
workers' payload limit. ``--wait`` follows the jobs document by document.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from poolq.ingest.cli.command_env import CLIENT_ERRORS, error, resolve_redis_url
from poolq.ingest.cli.enqueue_input import Prepared, prepare
from poolq.ingest.cli.enqueue_uris import prepare_prefix, prepare_urls
from poolq.ingest.cli.enqueue_wait import ProgressBar, summarize, summary_line
from poolq.ingest.client import PoolqClient
from poolq.ingest.outage import outage_limit_s
from poolq.ingest.priority import check_priority, job_priority
from poolq.wire.connection import RedisUnavailableError
from poolq.wire.job_plan import Limits, split_jobs
from poolq.wire.sources import FolderFile

EXIT_FAILED, EXIT_NOTHING, EXIT_TIMEOUT, EXIT_REDIS_LOST, EXIT_INTERRUPTED = 1, 2, 3, 4, 130
FILE_ENVELOPE_BYTES = 1024  # a file document's id, source and metadata around its bytes


class UsageError(ValueError):
    """A flag or the input cannot be used as given: nothing is enqueued."""


@dataclass
class Run:
    """What one ``poolq enqueue`` did (kept outside the event loop, for Ctrl-C)."""

    job_ids: list[str] = field(default_factory=list)
    prepared: Prepared | None = None
    summary: dict[str, Any] | None = None

    def follow(self) -> str:
        return f"`poolq status {' '.join(self.job_ids)}`"


def say(text: str) -> None:
    print(f"poolq enqueue: {text}", file=sys.stderr)


@dataclass(frozen=True)
class Args:
    input_path: Path
    collection: str
    wait: bool = False
    job_size: int = 32
    redis_url: str | None = None
    timeout_s: float | None = None
    force: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    hidden: bool = False
    as_json: bool = False
    progress: bool = True
    priority: str = "auto"
    redis_outage_limit_s: float | None = None
    max_file_bytes: int | None = None  # None: the workers' limit (constants.MAX_FILE_BYTES)
    uri: str | None = None  # a bucket's prefix or one object's URI (then input_path is unused)
    urls: bool = False  # input_path holds one URL a line


async def _enqueue(a: Args, url: str, run: Run) -> None:
    async with PoolqClient(url, redis_outage_limit_s=a.redis_outage_limit_s) as client:
        limits = await client.limits()
        if a.max_file_bytes is not None:
            limits = replace(limits, max_file_bytes=a.max_file_bytes)
        if a.job_size > limits.max_documents_per_job:
            raise UsageError(
                f"--job-size {a.job_size} is over {limits.describe()} limit of "
                f"{limits.max_documents_per_job} documents per job; nothing was enqueued"
            )
        if a.uri is not None:  # listed here, fetched by the workers
            prep = prepare_prefix(a.uri, limits, include=a.include, exclude=a.exclude)
        elif a.urls:
            prep = prepare_urls(a.input_path)
        else:
            prep = prepare(
                a.input_path, a.collection, limits,
                include=a.include, exclude=a.exclude, hidden=a.hidden,
            )  # fmt: skip
        run.prepared = prep
        for note in prep.notes:
            say(note)
        for p in prep.problems:
            say(p.line())
        if not prep.count:
            say(f"warning: no documents in {a.input_path if a.uri is None else a.uri}")
            return
        if prep.problems:
            say(f"{len(prep.problems)} of {prep.read} documents not sent")
        on_enqueued = lambda job_id, _: run.job_ids.append(job_id)  # noqa: E731
        if prep.documents:
            await client.enqueue(
                a.collection, prep.documents, job_size=a.job_size, force=a.force, limits=limits,
                on_enqueued=on_enqueued, priority=a.priority,
            )  # fmt: skip
        if prep.files:
            await send_files(client, a, prep.files, limits, on_enqueued)
        if not a.wait:
            return
        t0 = time.perf_counter()
        bar = ProgressBar(
            prep.count, url, show=a.progress,
            outage_limit_s=client.redis_outage_limit_s,
        )  # fmt: skip
        try:
            outcomes = await client.wait(run.job_ids, timeout_s=a.timeout_s, on_progress=bar)
        finally:
            bar.close()
        problems = [p.as_dict() for p in prep.problems]
        run.summary = summarize(outcomes, time.perf_counter() - t0, problems)


async def send_files(
    client: PoolqClient,
    a: Args,
    files: list[FolderFile],
    limits: Limits,
    on_enqueued: Callable[[str, int], None],
) -> None:
    """A folder's files as parse jobs of at most ``--job-size`` files within the payload
    limit, each file read just before its job is enqueued (memory: one job's files)."""
    sizes = [f.size + FILE_ENVELOPE_BYTES for f in files]
    budget = limits.job_budget(a.collection)
    batches = split_jobs(files, sizes, max_items=a.job_size, budget=budget)
    lane = job_priority(a.priority, len(batches))
    for batch in batches:
        docs = []
        for f in batch:
            try:
                docs.append(f.document())
            except OSError as exc:  # gone or unreadable since the folder was read
                say(f"document {f.id!r}: cannot be read ({exc.strerror or exc}); not sent")
        if not docs:
            continue
        await client.enqueue(
            a.collection, docs, job_size=a.job_size, force=a.force, limits=limits,
            on_enqueued=on_enqueued, priority=lane,
        )  # fmt: skip


def run_enqueue(a: Args) -> int:
    run = Run()
    try:
        if a.urls and (a.include or a.exclude or a.hidden or a.uri is not None):
            raise UsageError("--urls reads a file of URLs; --include, --exclude and --hidden "
                             "choose files in a folder or objects under a prefix")  # fmt: skip
        if a.uri is not None and a.hidden:
            raise UsageError(f"--hidden chooses files in a folder; {a.uri!r} is a URI")
        if a.uri is None and a.input_path.is_file() and (a.include or a.exclude or a.hidden):
            raise UsageError(
                f"--include, --exclude and --hidden choose files in a folder; "
                f"{str(a.input_path)!r} is a file"
            )
        check_priority(a.priority, "--priority")
        outage_limit_s(a.redis_outage_limit_s)  # (a bad POOLQ_REDIS_OUTAGE_LIMIT_S, named)
        asyncio.run(_enqueue(a, resolve_redis_url(a.redis_url), run))
    except KeyboardInterrupt:
        if run.job_ids:
            say(
                f"interrupted: {len(run.job_ids)} jobs stay queued; follow them with {run.follow()}"
            )
        else:
            say("interrupted: nothing was enqueued")
        return EXIT_INTERRUPTED
    except TimeoutError as exc:  # --timeout passed: the jobs stay queued
        error("enqueue", f"{exc}; follow the jobs with {run.follow()}")
        return EXIT_TIMEOUT
    except RedisUnavailableError as exc:
        if not run.job_ids:  # Redis down at the start: nothing enqueued
            error("enqueue", exc)
            return EXIT_NOTHING
        # gone while waiting, for longer than redis_outage_limit_s: the jobs stay queued
        error("enqueue", f"{exc}; the jobs stay queued: follow them with {run.follow()}")
        return EXIT_REDIS_LOST
    except CLIENT_ERRORS as exc:  # UsageError, a missing input, a prefix that cannot be listed
        # (ListingError, UriError), Redis down: nothing enqueued
        error("enqueue", exc)
        return EXIT_NOTHING
    prep = run.prepared
    failed = bool(prep is None or prep.problems or not prep.count)
    if run.summary is None:
        if a.as_json or not a.wait:
            print(json.dumps({"jobs": run.job_ids}))
        return EXIT_FAILED if failed else 0
    s = run.summary
    for e in s["errors"][len(prep.problems) if prep else 0 :]:
        say(f"document {e.get('id')!r}: {e.get('error')}")
    for e in s["job_errors"]:
        say(f"job {e['job_id']} failed: {e['error']}")
    if s["refused_jobs"]:
        say(f"{s['refused_jobs']} jobs refused every document they were sent (errors above)")
    print(json.dumps(s, ensure_ascii=False) if a.as_json else summary_line(s))
    return EXIT_FAILED if (failed or s["errors"] or s["failed_jobs"] or s["refused_jobs"]) else 0


JSON_SHAPES = (
    'one line: {"jobs": [JOB_ID, ...]} (without --wait; also printed without --json); with '
    '--wait one line: {"jobs", "job_ids", "failed_jobs", "refused_jobs", "documents", "points", '
    '"skipped", "parsed", "pages", "ocr_pages", "errors": [{"where"?, "id", "error", "code"?}], "job_errors", '
    '"seconds", "documents_per_s"}.'
)

# --help's epilog: the exit statuses run_enqueue returns
EPILOG = (
    "Exit status: 0 every document landed; 1 documents or jobs failed, were refused, were "
    "not sent, or there were none; 2 nothing was enqueued (a flag, the input or Redis); 3 "
    "--timeout passed (the jobs stay queued); 4 Redis stayed unreachable past "
    "--redis-outage-limit while waiting (the jobs stay queued); 130 interrupted (the jobs stay "
    "queued: `poolq status ID...`)."
)
