"""The parse job: files in, documents with their layout handed on as ingest jobs.

``parse(ctx, collection, files, force=False, priority="bulk")`` reads each file document
(``wire/files.py``: its bytes, a path the worker can read, or a URI it fetches:
``worker/fetch/``) in the worker's parse children
(``parse/sandbox.py``), turns each into a document that carries its layout
(``parse/layout.py``), and enqueues those on the ingest queue as jobs of the existing kind, ids
``{job_id}.encode{n}``: the encode stage then gives them the ingest job's retries, dead letters,
progress and one-run-at-a-time guarantee. A retry of the parse job enqueues nothing twice (arq
refuses an id it holds). A file that cannot be read is this job's error, with its code
(``encrypted``, ``corrupt``, ``no_text``, ``too_large``, ``parse_timeout``, ``unsupported``);
the other files go on; a page OCR could not read is an error of its own (field ``page N``) while
the rest of its file lands, and each page OCR'd counts in the job's progress (``ocr_pages``).
The result is an :class:`IngestResult` with ``parsed``, ``pages`` and
``next_jobs``, which :meth:`PoolqClient.wait` follows.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from poolq.wire import constants
from poolq.wire.documents import DocumentError
from poolq.wire.files import FileDocument, validate_file
from poolq.wire.placement import queue_placement
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.job_args import IngestArgs, ParseArgs
from poolq.wire.records.results import IngestResult
from poolq.wire.serialization import serialize
from poolq.wire.uris import parse_uri
from poolq.worker.fetch.errors import FetchError, ObjectGone
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.layout import file_hash, parsed_document
from poolq.worker.runtime.job_progress import JobProgress
from poolq.worker.runtime.parse_runtime import ParseRuntime

ENVELOPE_BYTES = 4096  # an ingest job's arguments around its documents, generously


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
    room = asyncio.Semaphore(2 * rt.pool.workers)  # files read into memory at once

    async def one(f: FileDocument) -> dict[str, Any] | DocumentError:
        async with room:
            outcome = await _parse_one(rt, f, lambda: progress.add(ocr_pages=1))
        if isinstance(outcome, DocumentError):
            progress.add(errors=1, done=1)
            return outcome
        progress.add(parsed=1, pages=outcome[1])
        rt.files_parsed += 1
        errors.extend(outcome[2])
        return outcome[0]

    async with progress:
        outcomes = await asyncio.gather(*(one(f) for f in todo))
        docs = [o for o in outcomes if not isinstance(o, DocumentError)]
        errors += [o for o in outcomes if isinstance(o, DocumentError)]
        pages = progress.counts.pages
        next_jobs = await _hand_on(ctx, job_id, args, docs)
    rt.jobs_done += 1
    return IngestResult(
        points=0, documents=0, errors=[e.as_record() for e in errors], skipped=0,
        seconds=round(time.perf_counter() - t0, 3), parsed=len(docs), pages=pages,
        next_jobs=next_jobs,
    ).to_wire()  # fmt: skip


async def _parse_one(
    rt: ParseRuntime, f: FileDocument, on_page: Callable[[], None]
) -> tuple[dict[str, Any], int, list[DocumentError]] | DocumentError:
    """The ingest document of ``f``, its pages and its pages' errors, or its error (naming
    the file). ``on_page()``: after each page OCR'd."""
    data = f.data
    if f.uri is not None:
        try:
            data = await _fetch(f.uri, rt.settings)
        except ParseError as e:
            return DocumentError(f.id, "uri", f"{f.source}: {e.message}", e.code)
    if data is None:
        assert f.path is not None
        try:
            data = await asyncio.to_thread(read_path, f.path, rt.settings)
        except ParseError as e:
            return DocumentError(f.id, "path", f"{f.source}: {e.message}", e.code)
    try:
        parsed = await rt.pool.parse(data, f.source, on_page)
    except ParseError as e:
        return DocumentError(f.id, "file", f"{f.source}: {e.message}", e.code)
    doc = parsed_document(
        f.id, parsed, source=f.source, metadata=f.metadata, hashed=file_hash(data)
    )
    lost = [
        DocumentError(f.id, f"page {page}", f"{f.source}: {message}", ErrorCode(code))
        for page, code, message in parsed.page_errors
    ]
    return doc, parsed.pages or 0, lost


_FETCHERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
    weakref.WeakKeyDictionary()
)  # a Fetcher per event loop: the store and HTTP clients pool their connections


async def _fetch(uri: str, settings: Any) -> bytes:
    """The bytes of a document given by URI (``file://``: as a path, inside the allowed roots),
    else :class:`ParseError` with the fetch's code. A 404 is ``corrupt`` here: the caller named
    one object, and it is not there."""
    parsed = parse_uri(uri)
    if parsed.scheme == "file":
        return await asyncio.to_thread(read_path, "/" + parsed.key, settings)
    allowed = os.environ.get("POOLQ_SOURCE_URIS", "").replace(",", " ").split()
    if allowed and not any(uri.startswith(a) for a in allowed):
        raise ParseError(ErrorCode.UNSUPPORTED, "outside the URIs this worker may fetch")
    try:  # obstore and httpx: the sources extra (in parse and worker), imported when needed
        from poolq.worker.fetch.fetcher import Fetcher
    except ImportError as e:
        raise ParseError(
            ErrorCode.UNSUPPORTED, f"this worker cannot fetch URIs ({e.name} is not installed: "
            "pip install 'poolq[sources]')",
        ) from None  # fmt: skip
    loop = asyncio.get_running_loop()
    fetcher = _FETCHERS.get(loop) or _FETCHERS.setdefault(loop, Fetcher())
    try:
        return (await fetcher.fetch(uri, settings.max_file_bytes)).data
    except ObjectGone as e:
        raise ParseError(ErrorCode.CORRUPT, f"cannot be fetched: {e.message}") from None
    except FetchError as e:
        raise ParseError(e.code, f"cannot be fetched: {e.message}") from None


def read_path(path: str, settings: Any) -> bytes:
    """The bytes of a file a parse job names by path: inside the allowed roots, within the
    byte limit (checked before reading), else :class:`ParseError`."""
    p = Path(path)
    roots = [Path(r).resolve() for r in (settings.source_roots or "").split(os.pathsep) if r]
    if roots and not any(p.resolve().is_relative_to(r) for r in roots):
        raise ParseError(ErrorCode.UNSUPPORTED, "outside the folders this worker may read")
    try:
        size = p.stat().st_size
        if size > settings.max_file_bytes:
            raise ParseError(
                ErrorCode.TOO_LARGE,
                f"{size} bytes, over the limit of {settings.max_file_bytes} bytes per file",
            )
        with p.open("rb") as fh:
            return fh.read(settings.max_file_bytes + 1)
    except OSError as e:
        raise ParseError(ErrorCode.CORRUPT, f"cannot be read ({e.strerror or e})") from None


async def _hand_on(
    ctx: dict[str, Any], job_id: str, args: ParseArgs, docs: list[dict[str, Any]]
) -> list[str]:
    """Enqueue ``docs`` as ingest jobs that fit a worker's default payload limit; their ids."""
    redis = ctx.get("redis")
    if not docs or redis is None:
        return []
    budget = constants.MAX_JOB_BYTES - ENVELOPE_BYTES
    batches: list[list[dict[str, Any]]] = [[]]
    used = 0
    for doc in docs:
        size = len(serialize(doc))
        full = len(batches[-1]) >= constants.MAX_DOCUMENTS_PER_JOB or used + size > budget
        if batches[-1] and full:
            batches.append([])
            used = 0
        batches[-1].append(doc)
        used += size
    ids = []
    for n, batch in enumerate(batches):
        next_id = f"{job_id}.encode{n}"
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
    return ids
