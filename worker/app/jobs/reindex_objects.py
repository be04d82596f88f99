"""A reindex whose source is a bucket's prefix (``s3://bucket/prefix/``, ``gs://``, ``az://``):
the sync, one listing page at a time (planned in ``worker/reindex/objects.py``).

For each page: the unchanged objects are skipped (not fetched; their metadata rewritten where it
is not the sync's), the others fetched, those whose bytes did not change only get their tag
written, the rest parsed by this sync's file reader (``sync_page.py``) and encoded; stored
documents the page no longer lists are deleted. Then the page is checkpointed
(``SOURCE_SYNC_KEY``): a sync that is killed, or parked because the object store stayed down, resumes
after the last page it finished. A parked sync enqueues its own resume (``source_park_s``
later, default 300 s) and returns a skipped result that says why.
A full rebuild writes every object into a new collection and switches the alias at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from poolq.sinks.aliases import new_physical_name
from poolq.sinks.inventory import StoredDocument, document_inventory
from poolq.sinks.points import point_id
from poolq.wire import constants
from poolq.wire import payload as fields
from poolq.wire.documents import Document, DocumentError
from poolq.wire.records.job_args import ReindexArgs
from poolq.wire.records.reindex import ReindexSkipped, ReindexSummary
from poolq.wire.records.sync import SyncCheckpoint
from poolq.wire.uris import parse_uri
from poolq.worker.app.jobs.alias_switch import start_rebuild, switch_alias
from poolq.worker.app.jobs.sync_page import PageRead, fetch_and_parse
from poolq.worker.fetch.errors import SourceUnavailable
from poolq.worker.parse.file_reader import FileReader
from poolq.worker.reindex.objects import StoredUnder, plan_page
from poolq.worker.reindex.plan import BATCH_DOCUMENTS, BATCHES_IN_FLIGHT
from poolq.worker.runtime.pipeline import ingest_documents

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from poolq.worker.runtime.worker_runtime import Runtime


async def _load(redis: Redis | None, key: str) -> SyncCheckpoint | None:
    if redis is None:
        return None
    raw = await redis.get(key)
    if not raw:
        return None
    try:
        return SyncCheckpoint.unpack(raw)
    except ValueError:
        return None


async def _save(redis: Redis | None, key: str, ck: SyncCheckpoint) -> None:
    if redis is not None:
        await redis.set(key, ck.pack(), ex=constants.SOURCE_SYNC_TTL_S)


async def sync_objects(
    rt: Runtime, options: ReindexArgs, *, job_id: str, redis: Redis | None, progress: Any
) -> ReindexSummary | ReindexSkipped:
    """Run the sync (see the module docstring); ``progress``: the reindex's progress publisher."""
    t0 = time.perf_counter()
    prefix = parse_uri(options.source)
    if not prefix.is_object_store:
        raise ValueError(
            f"source {options.source!r}: a sync reads a bucket's prefix (s3://, gs://, az://)"
        )
    if not prefix.is_prefix:
        raise ValueError(
            f"source {options.source!r}: a sync reads a prefix; end it with '/' ({options.source}/)"
        )
    alias, version = options.collection, rt.vectorizer.version
    key = constants.SOURCE_SYNC_KEY.format(collection=alias)
    ck = await _load(redis, key)
    if ck is not None and not ck.matches(options.source, alias, options.full):
        ck = None
    stored: dict[str, StoredDocument] = {}
    if options.full:
        target = ck.target if ck is not None else new_physical_name(alias)
        if ck is None:
            await start_rebuild(rt, alias, target)
    else:
        await rt.ensure_collection(alias)
        target = alias
        stored = await rt.writer.read(lambda s: document_inventory(s, alias))
    ck = ck or SyncCheckpoint(source=options.source, collection=alias, full=options.full,
                              target=target)  # fmt: skip
    under = StoredUnder(stored, prefix)
    texts_0 = sum(e.stats.texts for e in rt.vectorizer.engines.values())
    writes_0, points_0 = rt.writer.write_calls, rt.writer.points_written
    errors: list[DocumentError] = []
    reader = FileReader.open(rt.settings, scheduled=[s.source for s in rt.settings.reindex])
    await progress.publish(force=True, state="syncing", listed=ck.listed, fetched=ck.fetched)
    try:
        after_key = None if ck.after is None else parse_uri(ck.after).key
        async for listing in reader.fetcher().objects.pages(
            prefix, after=after_key, page_objects=rt.settings.source_page_objects
        ):
            plan = plan_page(listing, under, prefix, version, after=ck.after, full=options.full)

            # (the checkpoint moves only once the page is done: a page cut short is redone)
            async def tick(
                page: PageRead, base: SyncCheckpoint = ck, listed: int = len(listing)
            ) -> None:
                await progress.publish(
                    listed=base.listed + listed, fetched=base.fetched + page.fetched,
                    parsed=base.parsed + page.parsed,
                )  # fmt: skip

            page = await fetch_and_parse(reader, plan.to_fetch, stored, prefix, version,
                                          options.full, tick)  # fmt: skip
            chunks, points = await encode_batches(rt, target, page.docs, job_id, errors)
            relabeled = plan.relabeled + page.tags
            for have, meta in relabeled:  # same object or same bytes: the metadata in place
                await rt.writer.set_payload(
                    target, [point_id(have.doc_id, i) for i in range(have.chunk_count)],
                    {fields.METADATA: meta, fields.META_HASH: Document("-", "-", meta).metadata_hash},
                )  # fmt: skip
            removed = plan.removed + page.gone
            ids = [point_id(s.doc_id, i) for s in removed for i in range(s.chunk_count)]
            if ids:
                await rt.writer.delete_points(target, ids)
            errors += page.errors
            kinds = list(page.kinds.values())
            ck = replace(
                ck, after=listing[-1].uri, listed=ck.listed + len(listing),
                unchanged=ck.unchanged + len(plan.unchanged), fetched=ck.fetched + page.fetched,
                parsed=ck.parsed + page.parsed, pages=ck.pages + page.pages,
                new=ck.new + kinds.count("new"), changed=ck.changed + kinds.count("changed"),
                stale=ck.stale + kinds.count("stale"),
                metadata_only=ck.metadata_only + len(relabeled), removed=ck.removed + len(removed),
                encoded_chunks=ck.encoded_chunks + chunks, points=ck.points + points,
                errors=ck.errors + len(page.errors), parked=None,
            )  # fmt: skip
            await _save(redis, key, ck)
            await progress.publish(force=True, **_progress(ck))
        # stored documents after the last listed key: gone from the bucket
        tail = [under.stored[i] for i in under.removed_through(ck.after, None, set())]
        if tail:
            await rt.writer.delete_points(
                target, [point_id(s.doc_id, i) for s in tail for i in range(s.chunk_count)]
            )
            ck = replace(ck, removed=ck.removed + len(tail))
    except SourceUnavailable as e:
        return await _park(redis, key, ck, options, progress, e, rt.settings.source_park_s)
    finally:
        await reader.close()
    previous = dropped = None
    if options.full:
        previous, dropped = await switch_alias(
            rt, progress, alias, target, keep_old=options.keep_old
        )
    if redis is not None:
        with contextlib.suppress(Exception):
            await redis.delete(key)
    return ReindexSummary(
        collection=alias, source=options.source, full=options.full,
        documents=ck.new + ck.changed + ck.stale + ck.metadata_only + ck.unchanged,
        target=target, new=ck.new, changed=ck.changed, stale=ck.stale,
        metadata_only=ck.metadata_only, unchanged=ck.unchanged, removed=ck.removed,
        switched_from=previous, dropped=dropped, points=ck.points,
        errors=[e.as_record() for e in errors], encoded_chunks=ck.encoded_chunks,
        engine_requests=sum(e.stats.texts for e in rt.vectorizer.engines.values()) - texts_0,
        write_calls=rt.writer.write_calls - writes_0,
        points_written=rt.writer.points_written - points_0,
        seconds=round(time.perf_counter() - t0, 3), listed=ck.listed, fetched=ck.fetched,
    )  # fmt: skip


def _progress(ck: SyncCheckpoint) -> dict[str, Any]:
    return {
        "listed": ck.listed, "fetched": ck.fetched, "parsed": ck.parsed, "pages": ck.pages,
        "done": ck.new + ck.changed + ck.stale, "to_encode": ck.new + ck.changed + ck.stale,
        "new": ck.new, "changed": ck.changed, "stale": ck.stale,
        "metadata_only": ck.metadata_only, "unchanged": ck.unchanged, "removed": ck.removed,
    }  # fmt: skip


async def encode_batches(
    rt: Runtime,
    target: str,
    docs: list[Document],
    job_id: str,
    errors: list[DocumentError],
    progress: Any = None,
) -> tuple[int, int]:
    """Chunks encoded and points written for ``docs``, a few batches at a time (the reindex is
    one caller: it shares the engines with jobs by tokens); ``progress``, when given, publishes
    the documents done after each batch."""
    slots = asyncio.Semaphore(BATCHES_IN_FLIGHT)
    chunks = points = done = 0

    async def one(batch: list[Document]) -> None:
        nonlocal chunks, points, done
        async with slots:
            outcome = await ingest_documents(rt, target, batch, group=job_id)
        errors.extend(outcome.errors)
        chunks += outcome.chunks
        points += outcome.points
        done += len(batch)
        if progress is not None:
            await progress.publish(done=done)

    await asyncio.gather(
        *(one(docs[i : i + BATCH_DOCUMENTS]) for i in range(0, len(docs), BATCH_DOCUMENTS))
    )
    return chunks, points


async def _park(
    redis: Redis | None, key: str, ck: SyncCheckpoint, options: ReindexArgs, progress: Any,
    exc: SourceUnavailable, park_s: float,
) -> ReindexSkipped:  # fmt: skip
    """The object store stayed down: keep the checkpoint, enqueue the resume ``park_s`` later, say
    so."""
    ck = replace(ck, parked=exc.message)
    await _save(redis, key, ck)
    resume = f"reindex-resume-{uuid.uuid4().hex}"
    if redis is not None:
        args, _ = options.call()
        await redis.enqueue_job(constants.REINDEX_JOB, *args, _job_id=resume, _defer_by=park_s)  # type: ignore[attr-defined]
    why = (
        f"parked: the object store of {options.source} is unavailable ({exc.message}); "
        f"{ck.listed} objects listed so far; resumes from its checkpoint in {park_s:g}s "
        f"(job {resume})"
    )
    await progress.publish(force=True, state="parked", error=why, **_progress(ck))
    return ReindexSkipped(collection=options.collection, skipped=why)
