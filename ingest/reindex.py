"""Reindexing a collection from its source: incremental by content hash, or a full rebuild.

Incremental (the default): the collection's inventory (one record per document: text hash,
metadata hash, profile version, chunk count) is compared with the source:

* unchanged text, metadata and profile version: nothing at all (no model work, no writes);
* only the metadata changed: the payloads are updated in place (no model work);
* new documents, changed text, or points written by another profile version ("stale"):
  chunked, encoded and written; chunks beyond the new count are deleted;
* documents gone from the source: their points are deleted (by id, from the chunk count).

Full rebuild (``full=True``, for a model or profile change): every document is written into a
new physical collection, then the alias is switched to it in one atomic call, so searches see
the old collection or the complete new one, never a half-built one. The previous collection is
dropped after the switch unless ``keep_old``.

One reindex per collection runs at a time (a Redis lock); progress is published under
``REINDEX_PROGRESS_KEY`` for ``poolq status``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.documents import Document, DocumentError, validate_documents
from ingest.sources import Source, open_source
from sinks.aliases import new_physical_name, physical_collections, point_alias
from sinks.inventory import StoredDocument, document_inventory
from sinks.points import point_id
from worker import constants
from worker.serialization import serialize

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from worker.runtime import Runtime

log = logging.getLogger("poolq.reindex")
BATCH_DOCUMENTS = 32  # documents per pipeline batch
BATCHES_IN_FLIGHT = 4  # batches encoding at once: keeps the engine's batches full
PROGRESS_EVERY_S = 0.5


@dataclass(frozen=True)
class ReindexOptions:
    source: str
    collection: str
    full: bool = False
    keep_old: bool = False

    @classmethod
    def checked(cls, source: Any, collection: Any, full: Any, keep_old: Any) -> ReindexOptions:
        for name, value in (("source", source), ("collection", collection)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name}: expected a non-empty string, got {value!r}")
        for name, value in (("full", full), ("keep_old", keep_old)):
            if not isinstance(value, bool):
                raise ValueError(f"{name}: expected true or false, got {value!r}")
        return cls(source, collection, full, keep_old)


@dataclass
class ReindexPlan:
    new: list[Document] = field(default_factory=list)
    changed: list[Document] = field(default_factory=list)  # text changed
    stale: list[Document] = field(default_factory=list)  # same text, other profile version
    metadata_only: list[Document] = field(default_factory=list)
    unchanged: int = 0
    removed: list[StoredDocument] = field(default_factory=list)

    @property
    def to_encode(self) -> list[Document]:
        return self.new + self.changed + self.stale

    def counts(self) -> dict[str, int]:
        return {
            "new": len(self.new),
            "changed": len(self.changed),
            "stale": len(self.stale),
            "metadata_only": len(self.metadata_only),
            "unchanged": self.unchanged,
            "removed": len(self.removed),
        }


def plan_reindex(
    docs: Sequence[Document], stored: Mapping[str, StoredDocument], version: str
) -> ReindexPlan:
    """What to do for each document (see the module docstring)."""
    plan = ReindexPlan()
    for doc in docs:
        have = stored.get(doc.id)
        if have is None:
            plan.new.append(doc)
        elif have.doc_hash != doc.content_hash:
            plan.changed.append(doc)
        elif have.profile_version != version:
            plan.stale.append(doc)
        elif have.meta_hash != doc.metadata_hash:
            plan.metadata_only.append(doc)
        else:
            plan.unchanged += 1
    in_source = {d.id for d in docs}
    plan.removed = [s for doc_id, s in stored.items() if doc_id not in in_source]
    return plan


class SourceNotAllowedError(ValueError):
    pass


def check_source_allowed(source: str, roots: Sequence[str]) -> None:
    """Anyone who can write to Redis can enqueue a reindex: the worker only reads sources
    under its allowed roots (``source_roots``, plus the sources its own config schedules)."""
    path = Path(source).resolve()
    for root in roots:
        r = Path(root).resolve()
        if path == r or r in path.parents:
            return
    raise SourceNotAllowedError(
        f"source {source!r} is outside the worker's source roots {list(roots)}; "
        "set source_roots (POOLQ_SOURCE_ROOTS, separated by ':') to allow it"
    )


def read_source(
    source: Source | str | Path, max_bytes: int
) -> tuple[list[Document], list[DocumentError], list[str]]:
    """Valid documents, invalid ones (with id and field) and unreadable entries of a source."""
    src = open_source(source) if isinstance(source, str | Path) else source
    raw = list(src.documents())
    docs, errors = validate_documents(raw, max_bytes=max_bytes)
    return docs, errors, list(getattr(src, "errors", []))


@dataclass
class _Progress:
    redis: Redis | None
    key: str
    state: dict[str, Any]
    last_s: float = 0.0

    async def publish(self, force: bool = False, **updates: Any) -> None:
        self.state.update(updates)
        now = time.monotonic()
        if self.redis is None or (not force and now - self.last_s < PROGRESS_EVERY_S):
            return
        self.last_s = now
        self.state["updated_at"] = time.time()
        with contextlib.suppress(Exception):  # progress is best effort: never fail the reindex
            await self.redis.set(
                self.key, serialize(self.state), ex=constants.REINDEX_PROGRESS_TTL_S
            )


async def run_reindex(
    rt: Runtime, options: ReindexOptions, *, job_id: str, redis: Redis | None
) -> dict[str, Any]:
    """Run one reindex in the worker (see the module docstring); returns its summary."""
    from worker.pipeline import ingest_documents

    t0 = time.perf_counter()
    check_source_allowed(options.source, rt.settings.allowed_source_roots())
    alias = options.collection
    lock_key = constants.REINDEX_LOCK_KEY.format(collection=alias)
    if redis is not None:
        got = await redis.set(lock_key, job_id, nx=True, ex=rt.settings.reindex_timeout_s)
        if not got:
            holder = await redis.get(lock_key)
            return {
                "collection": alias,
                "skipped": f"another reindex of {alias!r} is running (job {holder!r})",
            }
    progress = _Progress(
        redis,
        constants.REINDEX_PROGRESS_KEY.format(collection=alias),
        {
            "collection": alias,
            "source": options.source,
            "full": options.full,
            "job_id": job_id,
            "state": "reading source",
            "started_at": time.time(),
            "done": 0,
            "to_encode": 0,
        },
    )
    engine_texts_0 = _engine_texts(rt)
    writes_0, points_0 = rt.writer.write_calls, rt.writer.points_written
    try:
        await progress.publish(force=True)
        docs, doc_errors, source_errors = await asyncio.to_thread(
            read_source, options.source, rt.settings.max_document_bytes
        )
        summary: dict[str, Any] = {
            "collection": alias,
            "source": options.source,
            "full": options.full,
            "documents": len(docs),
        }
        errors: list[DocumentError] = list(doc_errors)
        stored: dict[str, StoredDocument] = {}

        if options.full:
            target = new_physical_name(alias)
            plan = ReindexPlan(new=list(docs))
            await rt.writer.ensure_collection(rt.schema(target))
            # a crashed rebuild may have left an unfinished collection: drop it (the lock says
            # no other rebuild of this alias is running)
            current = await rt.writer.call(lambda c: _resolve(c, alias))
            orphans = [
                c
                for c in await rt.writer.call(lambda c: physical_collections(c, alias))
                if c not in (current, target)
            ]
            for name in orphans:
                await rt.writer.call(partial(_drop, name=name))
        else:
            await rt.ensure_collection(alias)
            target = alias
            stored = await rt.writer.read(lambda c: document_inventory(c, alias))
            # hashing every document's text: off the event loop
            plan = await asyncio.to_thread(plan_reindex, docs, stored, rt.vectorizer.version)
        summary["target"] = target
        summary |= plan.counts()
        to_encode = plan.to_encode
        await progress.publish(
            force=True, state="encoding", to_encode=len(to_encode), **plan.counts()
        )

        # new, changed and stale documents: through the pipeline, a few batches at a time
        slots = asyncio.Semaphore(BATCHES_IN_FLIGHT)
        done = 0
        points = 0
        chunks = 0

        async def one_batch(batch: list[Document], n: int) -> None:
            nonlocal done, points, chunks
            async with slots:
                outcome = await ingest_documents(
                    rt, target, batch, group=f"{job_id}:{n}", whole_turn=True
                )
            errors.extend(outcome.errors)
            done += len(batch)
            points += outcome.points
            chunks += outcome.chunks
            await progress.publish(done=done)

        batches = [
            to_encode[i : i + BATCH_DOCUMENTS] for i in range(0, len(to_encode), BATCH_DOCUMENTS)
        ]
        await asyncio.gather(*(one_batch(b, n) for n, b in enumerate(batches)))

        # metadata-only changes: payloads in place; removed documents: their points by id
        for doc in plan.metadata_only:
            count = stored[doc.id].chunk_count
            await rt.writer.set_payload(
                target,
                [point_id(doc.id, i) for i in range(count)],
                {"metadata": doc.metadata, "meta_hash": doc.metadata_hash},
            )
        removed_ids = [point_id(s.doc_id, i) for s in plan.removed for i in range(s.chunk_count)]
        await rt.writer.delete_points(target, removed_ids)

        if options.full:
            await progress.publish(force=True, state="switching alias")
            previous = await rt.writer.call(lambda c: point_alias(c, alias, target))
            rt.forget_collection(alias)
            summary["switched_from"] = previous
            if previous is not None and not options.keep_old:
                await rt.writer.call(partial(_drop, name=previous))
                summary["dropped"] = previous

        summary |= {
            "points": points,
            "errors": [e.as_dict() for e in errors]
            + [{"id": None, "field": "source", "error": e} for e in source_errors],
            "encoded_chunks": chunks,
            # texts the worker's engines encoded meanwhile (every model counts each chunk)
            "engine_requests": _engine_texts(rt) - engine_texts_0,
            "write_calls": rt.writer.write_calls - writes_0,
            "points_written": rt.writer.points_written - points_0,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        await progress.publish(force=True, state="done", done=done, result=summary)
        log.info("reindex of %r done: %s", alias, {k: summary[k] for k in plan.counts()})
        return summary
    except BaseException as e:
        await progress.publish(force=True, state="failed", error=f"{type(e).__name__}: {e}")
        raise
    finally:
        if redis is not None:
            with contextlib.suppress(Exception):
                if (await redis.get(lock_key)) == job_id.encode():
                    await redis.delete(lock_key)


def _engine_texts(rt: Runtime) -> int:
    return sum(e.stats.texts for e in rt.vectorizer.engines.values())


def _drop(client: Any, *, name: str) -> None:
    log.info("dropping collection %r", name)
    client.delete_collection(name)


def _resolve(client: Any, alias: str) -> str:
    from sinks.schema import resolve_alias

    return resolve_alias(client, alias)
