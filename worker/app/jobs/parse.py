"""The parse job: files in, documents with their layout handed on as ingest jobs.

``parse(ctx, collection, files, force=False, priority="bulk")`` reads each file document
(``wire/files.py``: its bytes, a path under the worker's ``source_roots``, or a URI under its
``source_uris``, fetched) through the worker's file reader (``parse/file_reader.py``: its parse
children, a document that carries its layout), and enqueues those on the ingest queue as jobs
of the existing kind, ids ``{job_id}.encode{n}-{digest}``: the encode stage then gives them the
ingest job's retries, dead letters, progress and one-run-at-a-time guarantee. A retry of the
parse job enqueues nothing twice (arq refuses an id it holds). A file that cannot be read is
this job's error, with its code (``forbidden``, ``encrypted``, ``corrupt``, ``no_text``,
``too_large``, ``parse_timeout``, ``unsupported``); the other files go on. A page OCR could
not read is an error of its own (field ``page N``) while the rest of its file lands, and the
pages OCR'd count in the job's progress as each is read (``ocr_pages``). The result is an
:class:`IngestResult` with ``parsed``, ``pages`` and ``next_jobs``, which
:meth:`PoolqClient.wait` follows.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

from poolq.wire import constants
from poolq.wire.documents import DocumentError
from poolq.wire.files import FileDocument, validate_file
from poolq.wire.job_plan import Limits, split_jobs
from poolq.wire.live_workers import live_workers
from poolq.wire.placement import queue_placement
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.job_args import IngestArgs, ParseArgs
from poolq.wire.records.results import IngestResult
from poolq.wire.serialization import serialize
from poolq.worker.parse.file_reader import Parsed
from poolq.worker.runtime.job_progress import JobProgress
from poolq.worker.runtime.parse_runtime import ParseRuntime


async def parse(
    ctx: dict[str, Any],
    collection: str,
    files: list[Any],
    force: bool = False,
    priority: str = "bulk",
) -> dict[str, Any]:
    rt: ParseRuntime = ctx["runtime"]
    job_id = str(ctx.get("job_id", "local"))
    t0 = time.perf_counter()
    args = ParseArgs.checked(collection, files, force, priority)
    errors: list[DocumentError] = []
    todo: list[FileDocument] = []
    seen: set[str] = set()
    for position, raw in enumerate(args.files):
        f = validate_file(raw, position, max_file_bytes=rt.settings.max_file_bytes)
        if isinstance(f, FileDocument) and f.id in seen:
            f = DocumentError(f.id, "id", "appears more than once in this job")
        if isinstance(f, DocumentError):
            errors.append(f)
        else:
            seen.add(f.id)
            todo.append(f)
    progress = JobProgress(
        ctx.get("redis"), job_id, documents=len(args.files), clock=ctx.get("job_clock"),
        board=ctx.get("progress_board"),
    )  # fmt: skip
    progress.add(errors=len(errors), done=len(errors))
    room = asyncio.Semaphore(2 * rt.reader.pool.workers)  # files read into memory at once

    async def one(f: FileDocument) -> dict[str, Any] | DocumentError:
        async with room:
            outcome = await rt.reader.document(f, on_page=lambda: progress.add(ocr_pages=1))
        if isinstance(outcome, Parsed):
            progress.add(parsed=1, pages=outcome.pages)
            rt.files_parsed += 1
            errors.extend(outcome.page_errors)  # pages OCR could not read; the file landed
            return outcome.raw
        assert isinstance(outcome, DocumentError)  # (SameBytes: only for a known hash)
        progress.add(errors=1, done=1)
        return outcome

    async with progress:
        outcomes = await asyncio.gather(*(one(f) for f in todo))
        docs = [o for o in outcomes if not isinstance(o, DocumentError)]
        errors += [o for o in outcomes if isinstance(o, DocumentError)]
        pages = progress.counts.pages
        next_jobs, refused = await _hand_on(ctx, job_id, args, docs)
        errors += refused
    rt.jobs_done += 1
    return IngestResult(
        points=0, documents=0, errors=[e.as_record() for e in errors], skipped=0,
        seconds=round(time.perf_counter() - t0, 3), parsed=len(docs), pages=pages,
        next_jobs=next_jobs, ocr_pages=progress.counts.ocr_pages,
    ).to_wire()  # fmt: skip


async def _hand_on(
    ctx: dict[str, Any], job_id: str, args: ParseArgs, docs: list[dict[str, Any]]
) -> tuple[list[str], list[DocumentError]]:
    """Enqueue ``docs`` as ingest jobs planned for the live encode workers' limits
    (:func:`~poolq.wire.job_plan.split_jobs`); their ids, and the documents no job can carry.
    An id names the batch's documents (a digest of their ids), so a retry of this job that
    plans the same batch enqueues nothing twice, and one that plans another (the live limits
    changed meanwhile) loses none."""
    redis = ctx.get("redis")
    if not docs or redis is None:
        return [], []
    encoders = [h for h in await live_workers(redis) if h.role != "parse"]
    limits = Limits.from_heartbeats(encoders)
    budget = limits.job_budget(args.collection)
    sizes = [len(serialize(doc)) for doc in docs]
    refused, fits = [], []
    for doc, size in zip(docs, sizes, strict=True):
        if size <= budget:
            fits.append((doc, size))
            continue
        message = (
            f"{size} bytes as a job payload once parsed, over {limits.describe()} limit of "
            f"{limits.max_job_bytes} bytes per job"
        )
        refused.append(DocumentError(doc["id"], "file", message, ErrorCode.TOO_LARGE))
    batches = split_jobs(
        [d for d, _ in fits], [n for _, n in fits],
        max_items=limits.max_documents_per_job, budget=budget,
    )  # fmt: skip
    ids = []
    for n, batch in enumerate(batches):
        digest = hashlib.sha256("\n".join(d["id"] for d in batch).encode()).hexdigest()[:12]
        next_id = f"{job_id}.encode{n}-{digest}"
        call, kwargs = IngestArgs(args.collection, batch, args.force, args.priority).call()
        await redis.enqueue_job(
            constants.INGEST_JOB,
            *call,
            _job_id=next_id,
            _queue_name=constants.INGEST_QUEUE,
            **kwargs,
            **queue_placement(args.priority, time.time(), redis.expires_extra_ms),
        )  # fmt: skip  (None: an earlier try of this job enqueued it already)
        ids.append(next_id)
    return ids, refused
