"""The reindex job: bring a collection in line with its source (planned in
``worker/reindex/plan.py``), incrementally or as a full rebuild behind an atomic alias switch (the
new collection is loaded with indexing deferred, indexed, and only then switched to).

``reindex(ctx, source, collection, full=False, keep_old=False)``. One reindex per collection runs
at a time (a Redis lock); progress is published under ``REINDEX_PROGRESS_KEY`` for
``poolq status``. Both the job's result (a summary, or a skipped run) and its progress are the
records of ``wire/records/reindex.py``, which the client reads with.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from poolq.sinks.aliases import new_physical_name
from poolq.sinks.inventory import StoredDocument, document_inventory
from poolq.sinks.points import point_id
from poolq.wire import constants
from poolq.wire import payload as fields
from poolq.wire.documents import DocumentError
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.errors import ErrorRecord
from poolq.wire.records.reindex import ReindexProgress, ReindexSkipped, ReindexSummary
from poolq.wire.records.results import DocumentErrorRecord
from poolq.wire.uris import is_uri
from poolq.worker.app.jobs.alias_switch import start_rebuild, switch_alias
from poolq.worker.app.jobs.reindex_objects import encode_batches, sync_objects
from poolq.worker.parse.file_reader import FileReader, allowed
from poolq.worker.reindex.files import read_folder_files
from poolq.worker.reindex.plan import (
    PROGRESS_EVERY_S,
    ReindexOptions,
    ReindexPlan,
    check_source_allowed,
    check_uri_allowed,
    plan_reindex,
    read_source,
)
from poolq.worker.runtime.worker_runtime import Runtime

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("poolq.reindex")


@dataclass
class _Progress:
    """The reindex's :class:`ReindexProgress`, published under ``REINDEX_PROGRESS_KEY`` (at
    most every ``PROGRESS_EVERY_S`` unless forced)."""

    redis: Redis | None
    key: str
    record: ReindexProgress
    last_s: float = 0.0

    async def publish(self, force: bool = False, **updates: Any) -> None:
        self.record = replace(self.record, **updates)
        now = time.monotonic()
        if self.redis is None or (not force and now - self.last_s < PROGRESS_EVERY_S):
            return
        self.last_s = now
        self.record = replace(self.record, updated_at=time.time())
        with contextlib.suppress(Exception):  # progress is best effort: never fail the reindex
            await self.redis.set(self.key, self.record.pack(), ex=constants.REINDEX_PROGRESS_TTL_S)


async def run_reindex(
    rt: Runtime, options: ReindexOptions, *, job_id: str, redis: Redis | None
) -> ReindexSummary | ReindexSkipped:
    """Run one reindex in the worker (see the module docstring); returns its summary."""
    t0 = time.perf_counter()
    roots, uris = allowed(rt.settings, [s.source for s in rt.settings.reindex])
    if is_uri(options.source):  # a bucket's prefix: reindex_objects.py
        check_uri_allowed(options.source, uris)
    else:
        check_source_allowed(options.source, roots)
    alias = options.collection
    lock_key = constants.REINDEX_LOCK_KEY.format(collection=alias)
    if redis is not None:
        got = await redis.set(lock_key, job_id, nx=True, ex=rt.settings.reindex_timeout_s)
        holder = None if got else await redis.get(lock_key)
        # the same job run again (its worker died: the job's run lock says no other run is
        # alive) takes its own lock over; a sync then resumes from its checkpoint
        if holder is not None and holder != job_id.encode():
            return ReindexSkipped(
                collection=alias,
                skipped=f"another reindex of {alias!r} is running (job {holder!r})",
            )
    progress = _Progress(
        redis,
        constants.REINDEX_PROGRESS_KEY.format(collection=alias),
        ReindexProgress(
            collection=alias,
            source=options.source,
            full=options.full,
            job_id=job_id,
            state="reading source",
            started_at=time.time(),
        ),
    )
    engine_texts_0 = _engine_texts(rt)
    writes_0, points_0 = rt.writer.write_calls, rt.writer.points_written
    try:
        await progress.publish(force=True)
        if is_uri(options.source):
            synced = await sync_objects(rt, options, job_id=job_id, redis=redis, progress=progress)
            if isinstance(synced, ReindexSummary):
                await progress.publish(force=True, state="done", result=synced)
                log.info("sync of %r done: %s", alias, synced.counts())
            return synced
        docs, doc_errors, source_errors, files = await asyncio.to_thread(
            read_source, options.source, rt.settings.max_document_bytes
        )
        errors: list[DocumentError] = list(doc_errors)
        stored: dict[str, StoredDocument] = {}
        present: set[str] = set()  # files unchanged by their bytes: not parsed, not encoded

        if options.full:
            target = new_physical_name(alias)
            plan = ReindexPlan(new=list(docs))
            await start_rebuild(rt, alias, target)
        else:
            await rt.ensure_collection(alias)
            target = alias
            stored = await rt.writer.read(lambda s: document_inventory(s, alias))
        if files:
            await progress.publish(force=True, state="parsing files")
            # through a file reader of this reindex's own (its parse children)
            reader = FileReader.open(rt.settings, scheduled=[s.source for s in rt.settings.reindex])
            try:
                read = await read_folder_files(files, stored, rt.vectorizer.version, reader)
            finally:
                await reader.close()
            docs, present = docs + read.docs, read.unchanged
            errors += read.errors
            await progress.publish(force=True, parsed=read.parsed, pages=read.pages)
            if options.full:
                plan = ReindexPlan(new=list(docs))
        if not options.full:
            # hashing every document's text: off the event loop
            plan = await asyncio.to_thread(
                plan_reindex, docs, stored, rt.vectorizer.version, present
            )
        to_encode = plan.to_encode
        await progress.publish(
            force=True, state="encoding", to_encode=len(to_encode), **plan.counts()
        )

        # new, changed and stale documents: through the pipeline
        chunks, points = await encode_batches(rt, target, to_encode, job_id, errors, progress)

        # metadata-only changes: payloads in place; removed documents: their points by id
        for doc in plan.metadata_only:
            count = stored[doc.id].chunk_count
            await rt.writer.set_payload(
                target,
                [point_id(doc.id, i) for i in range(count)],
                {fields.METADATA: doc.metadata, fields.META_HASH: doc.metadata_hash},
            )
        removed_ids = [point_id(s.doc_id, i) for s in plan.removed for i in range(s.chunk_count)]
        await rt.writer.delete_points(target, removed_ids)

        previous: str | None = None  # the collection the alias named before a full rebuild
        dropped: str | None = None
        if options.full:
            previous, dropped = await switch_alias(
                rt, progress, alias, target, keep_old=options.keep_old
            )

        summary = ReindexSummary(
            collection=alias,
            source=options.source,
            full=options.full,
            documents=len(docs) + len(present),
            target=target,
            new=len(plan.new),
            changed=len(plan.changed),
            stale=len(plan.stale),
            metadata_only=len(plan.metadata_only),
            unchanged=plan.unchanged,
            removed=len(plan.removed),
            switched_from=previous,
            dropped=dropped,
            points=points,
            errors=[e.as_record() for e in errors]
            + [
                DocumentErrorRecord(None, "source", e, ErrorCode.BAD_REQUEST) for e in source_errors
            ],
            encoded_chunks=chunks,
            # texts the worker's engines encoded meanwhile (every model counts each chunk)
            engine_requests=_engine_texts(rt) - engine_texts_0,
            write_calls=rt.writer.write_calls - writes_0,
            points_written=rt.writer.points_written - points_0,
            seconds=round(time.perf_counter() - t0, 3),
        )
        await progress.publish(force=True, state="done", done=len(to_encode), result=summary)
        log.info("reindex of %r done: %s", alias, summary.counts())
        return summary
    except BaseException as e:
        failed = ErrorRecord.of(e)
        await progress.publish(force=True, state="failed", error=failed.text(), code=failed.code)
        raise
    finally:
        if redis is not None:
            with contextlib.suppress(Exception):
                if (await redis.get(lock_key)) == job_id.encode():
                    await redis.delete(lock_key)


def _engine_texts(rt: Runtime) -> int:
    return sum(e.stats.texts for e in rt.vectorizer.engines.values())


async def reindex(
    ctx: dict[str, Any],
    source: str,
    collection: str,
    full: bool = False,
    keep_old: bool = False,
) -> dict[str, Any]:
    rt: Runtime = ctx["runtime"]
    options = ReindexOptions.checked(source, collection, full, keep_old)
    result = await run_reindex(
        rt, options, job_id=str(ctx.get("job_id", "local")), redis=ctx.get("redis")
    )
    rt.jobs_done += 1
    return result.to_wire()
