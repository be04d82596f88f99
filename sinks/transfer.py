"""Moving a collection between stores, as ``.npy`` shards with a manifest (``sinks/npy_points.py``,
the default) or as JSON lines (``sinks/jsonl_points.py``): export from any store (Qdrant Edge, a
server, an old qdrant-client local-mode folder), import into a new collection of any store,
without re-encoding anything.

Import builds the collection as a full rebuild does: a new physical collection (vectors from the
first line, storage from the given ``[collection]`` settings) loaded in batches with indexing
deferred, checked to hold exactly as many points as the file, indexed, and only then named (the
alias ``collection`` switched to it), so the name never shows a half-imported collection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from poolq.sinks.aliases import new_physical_name
from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.jsonl_points import (
    PointLineError,
    check_point,
    from_json_line,
    schema_of,
    to_json_line,
)
from poolq.sinks.npy_points import Manifest, entries_of
from poolq.sinks.npy_reader import iter_points, read_manifest
from poolq.sinks.npy_writer import NpyWriter
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store.interface import Store

Progress = Callable[[int], None]  # called with the points just done


class TransferError(ValueError):
    """An export or import that cannot run as asked."""


@dataclass(frozen=True)
class ImportReport:
    points: int
    collection: str  # the physical collection behind the name
    schema: CollectionSchema


def export_points(
    store: Store,
    collection: str,
    write: Callable[[str], object],
    *,
    page_size: int = 256,
    progress: Progress | None = None,
) -> int:
    """Write every point of ``collection`` as one JSON line (with its newline) to ``write``;
    returns the number of points."""
    n = 0
    for records in _pages(store, collection, page_size):
        for record in records:
            write(to_json_line(record) + "\n")
        n += len(records)
        if progress is not None:
            progress(len(records))
    return n


def export_npy(
    store: Store,
    collection: str,
    folder: Path,
    *,
    page_size: int = 256,
    progress: Progress | None = None,
) -> int:
    """Write every point of ``collection`` into the new folder ``folder`` as ``.npy`` shards
    with a manifest, vectors in their stored datatype; returns the number of points."""
    check_exists(store, collection)
    writer = NpyWriter(folder, collection, entries_of(store.collection_params(collection)))
    for records in _pages(store, collection, page_size):
        writer.add(records)
        if progress is not None:
            progress(len(records))
    return writer.close()


def check_new(store: Store, collection: str) -> None:
    """:class:`TransferError` when ``collection`` exists already (an import writes a new one)."""
    if store.exists(collection) or collection in store.aliases():
        raise TransferError(
            f"collection {collection!r} exists already: import writes a new collection "
            "(delete it, or choose another --collection)"
        )


def check_exists(store: Store, collection: str) -> None:
    """:class:`TransferError` naming the collections there are, when ``collection`` is none."""
    if not store.exists(collection):
        have = ", ".join(sorted({*store.collections(), *store.aliases()})) or "none"
        raise TransferError(f"collection {collection!r} does not exist (collections: {have})")


def _pages(store: Store, collection: str, page_size: int) -> Iterator[list]:
    check_exists(store, collection)
    offset = None
    while True:
        records, offset = store.scroll(
            collection, limit=page_size, offset=offset, with_payload=True, with_vectors=True
        )
        if records:
            yield records
        if offset is None:
            return


def import_points(
    store: Store,
    collection: str,
    lines: Iterable[str],
    *,
    settings: CollectionSettings | None = None,
    batch: int = 128,
    progress: Progress | None = None,
) -> ImportReport:
    """Create ``collection`` and write the points of JSON ``lines`` into it (see the module
    docstring). Refuses a collection that exists already, a bad line (naming it) and a
    point id that comes twice."""

    def points() -> Iterator[tuple[str, Any]]:
        schema: CollectionSchema | None = None
        for line_no, text in enumerate(lines, 1):
            if not text.strip():
                continue
            point = from_json_line(line_no, text)
            if schema is None:
                schema = schema_of(line_no, point, collection)
            check_point(line_no, point, schema)
            yield f"line {line_no}", (point, schema)

    return _import(store, collection, points(), settings=settings, batch=batch, progress=progress)


def import_npy(
    store: Store,
    collection: str,
    folder: Path,
    *,
    settings: CollectionSettings | None = None,
    batch: int = 128,
    progress: Progress | None = None,
    manifest: Manifest | None = None,
) -> ImportReport:
    """Create ``collection`` and write the points of the ``.npy`` export ``folder`` into it
    (``manifest``: its :func:`read_manifest`, if read already); every file is checked against
    the manifest first (size, CRC-32), every shard's arrays before its points are written."""
    manifest = manifest or read_manifest(folder)
    schema = CollectionSchema(
        collection,
        tuple(VectorSpec(v.name, v.kind, v.size, "imported") for v in manifest.vectors),  # type: ignore[arg-type]
    )
    pairs = ((where, (point, schema)) for where, point in iter_points(manifest))
    return _import(store, collection, pairs, settings=settings, batch=batch, progress=progress)


def _import(
    store: Store,
    collection: str,
    points: Iterator[tuple[str, Any]],
    *,
    settings: CollectionSettings | None,
    batch: int,
    progress: Progress | None,
) -> ImportReport:
    """Build ``collection`` from ``(where, (point, schema))`` pairs (``where`` names the line or
    the shard's point in errors)."""
    check_new(store, collection)
    schema: CollectionSchema | None = None
    physical = new_physical_name(collection)
    pending: list = []
    seen: set[Any] = set()
    n = 0

    def flush() -> None:
        store.upsert(physical, pending)
        if progress is not None:
            progress(len(pending))
        pending.clear()

    try:
        for where, (point, learned) in points:
            if schema is None:
                schema = learned
                if settings is not None:
                    schema = CollectionSchema(collection, learned.vectors, settings)
                store.create_for_import(physical, schema.renamed(physical))
            if point.id in seen:
                raise PointLineError(f"{where}: point {point.id!r} comes twice in the file")
            seen.add(point.id)
            pending.append(point)
            n += 1
            if len(pending) >= batch:
                flush()
        if schema is None:
            raise TransferError("the file holds no points: nothing to import")
        if pending:
            flush()
        stored = store.count(physical)
        if stored != n:
            raise TransferError(
                f"collection {physical!r} holds {stored} points after importing {n}"
            )
    except BaseException:  # nothing half-imported stays behind
        if physical in store.collections():
            store.delete_collection(physical)
        raise
    store.finish_build(physical)
    store.switch_alias(collection, physical)
    return ImportReport(n, physical, schema)
