"""The embedded store: Qdrant Edge shards in one folder, behind names (``edge_catalog.py``),
as a :class:`~poolq.sinks.store.interface.Store`. Opening shards, their locks, the background
building of their indexes and closing are ``edge_shards.py``'s.

Requests arrive as qdrant-client models and are translated (``edge_convert.py``).

Durability: the WAL is on, and ``update`` returns once the operation is in it, so an acknowledged
write survives a crash of the process (``flush()`` only makes reopening faster).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from qdrant_client import models

from poolq.sinks import collection_config as cc
from poolq.sinks.points import PointRecord
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.store import edge_convert as cv
from poolq.sinks.store import edge_groups as eg
from poolq.sinks.store import edge_params as ep
from poolq.sinks.store import uint8_codec
from poolq.sinks.store.edge_shard import Shard, edge_errors
from poolq.sinks.store.edge_shards import CollectionNotFoundError as CollectionNotFoundError
from poolq.sinks.store.edge_shards import EdgeShards
from poolq.sinks.store.interface import Selector, Store

_EDGE_INDEX = {
    models.PayloadSchemaType.KEYWORD: qe.PayloadSchemaType.Keyword,
    models.PayloadSchemaType.INTEGER: qe.PayloadSchemaType.Integer,
}


class EdgeStore(EdgeShards, Store):
    accepts_arrays = True
    concurrent_reads = True

    def __init__(self, path: str | Path, *, optimize_every: int = 8192) -> None:
        super().__init__(path, optimize_every=optimize_every)
        self._uint8: dict[Path, frozenset[str]] = {}  # shard folder -> its uint8 vectors

    def __repr__(self) -> str:
        return f"EdgeStore({str(self.path)!r})"

    # -- names -------------------------------------------------------------------------------

    def collections(self) -> list[str]:
        with self._mutex:
            return sorted(self._catalog.collections)

    def aliases(self) -> dict[str, str]:
        with self._mutex:
            return dict(self._catalog.aliases)

    def switch_alias(self, alias: str, target: str) -> None:
        with self._mutex:
            if target not in self._catalog.collections:
                raise CollectionNotFoundError(self._missing(target))
            if alias in self._catalog.collections:
                raise ValueError(f"{alias!r} is a collection, not an alias: delete it first")
            self._catalog.aliases[alias] = target
            self._catalog.save()  # the pointer, renamed into place: old target or new

    # -- collections -------------------------------------------------------------------------

    def create_collection(
        self, name: str, schema: CollectionSchema, *, defer_indexing: bool = False
    ) -> bool:
        vectors, sparse = cc.vectors_config(schema), cc.sparse_vectors_config(schema)
        return self.create_from_params(
            name, vectors, sparse, indexes=cc.PAYLOAD_INDEXES, defer_indexing=defer_indexing
        )

    def create_for_import(self, name: str, schema: CollectionSchema) -> None:
        """Without a WAL until :meth:`finish_build`: Edge 0.9 replays the whole WAL on every
        load (finish_build loads twice), and the points are written once more by it; a
        crash leaves an unnamed collection, which no alias names."""
        vectors, sparse = cc.vectors_config(schema), cc.sparse_vectors_config(schema)
        kw: dict[str, Any] = {"indexes": cc.PAYLOAD_INDEXES, "defer_indexing": True, "wal": False}
        if not self.create_from_params(name, vectors, sparse, **kw):
            raise ValueError(f"collection {name!r} exists already")

    def create_from_params(
        self,
        name: str,
        vectors: dict[str, models.VectorParams],
        sparse: dict[str, models.SparseVectorParams],
        *,
        indexes: dict[str, models.PayloadSchemaType] | None = None,
        defer_indexing: bool = False,
        wal: bool = True,
    ) -> bool:
        """Create the physical collection ``name`` from Qdrant parameters (a schema's, or a
        server's request) with the payload ``indexes``; False if it already existed."""
        config = ep.edge_config(vectors, sparse, defer_indexing=defer_indexing, wal=wal)
        with self._mutex:
            if name in self._catalog.collections:
                return False
            if name in self._catalog.aliases:
                raise ValueError(f"{name!r} is an alias: a collection cannot take its name")
            folder_name = self._catalog.new_folder(name)
            folder = self.path / "shards" / folder_name
            with edge_errors(f"creating collection {name!r}"):
                shard = qe.EdgeShard.create(str(folder), config)
                for key, kind in (indexes or {}).items():
                    shard.update(qe.UpdateOperation.create_field_index(key, _EDGE_INDEX[kind]))
            self._catalog.collections[name] = folder_name
            self._catalog.save()
            self._open[name] = Shard(name, folder, shard, deferred=defer_indexing, unlogged=not wal)
        return True

    def ensure_payload_indexes(self, name: str) -> None:
        with self._using(name) as sh, edge_errors(f"payload indexes of {name!r}"):
            have = set(sh.shard.info().payload_schema)
            for key, kind in cc.PAYLOAD_INDEXES.items():
                if key not in have:
                    sh.shard.update(qe.UpdateOperation.create_field_index(key, _EDGE_INDEX[kind]))

    def delete_collection(self, name: str) -> None:
        with self._mutex:
            if name not in self._catalog.collections:
                raise CollectionNotFoundError(self._missing(name))
            folder = self._catalog.folder(name)
            del self._catalog.collections[name]
            self._catalog.aliases = {a: t for a, t in self._catalog.aliases.items() if t != name}
            self._catalog.save()  # gone from the map first: a crash leaves only an orphan
            sh = self._open.pop(name, None)
        if sh is not None:
            with sh.lock.exclusive():  # searches still on it finish first
                with edge_errors(f"closing {name!r}"):
                    sh.shard.close()
                sh.shard = None
        shutil.rmtree(folder, ignore_errors=True)

    # -- points ------------------------------------------------------------------------------

    def upsert(self, collection: str, points: Sequence[models.PointStruct]) -> None:
        self.upsert_parts(collection, [(p.id, p.vector, p.payload) for p in points])

    def upsert_records(self, collection: str, records: Sequence[PointRecord]) -> None:
        """The writer's records, straight to Edge points: their arrays become the lists Edge
        takes there, and nowhere else."""
        self.upsert_parts(collection, [(r.id, r.vectors, r.payload) for r in records])

    def upsert_parts(self, collection: str, parts: Sequence[cv.PointParts]) -> None:
        """:meth:`upsert` of ``(id, vectors, payload)`` tuples (what a
        :class:`~poolq.sinks.store.process.ProcessStore` sends)."""
        names = self._uint8_of(collection)
        encoded = [(i, uint8_codec.encode_vectors(v, names), pl) for i, v, pl in parts]
        self._write(collection, cv.points(encoded))

    def _write(self, collection: str, converted: list[Any]) -> None:
        with self._using(collection) as sh, edge_errors(f"upsert into {collection!r}"):
            sh.shard.update(qe.UpdateOperation.upsert_points(converted))
            sh.written += len(converted)

    def delete(self, collection: str, selector: Selector) -> None:
        if isinstance(selector, models.PointIdsList):
            op = qe.UpdateOperation.delete_points(list(selector.points))
        else:
            flt = cv.filter_(selector.filter)
            assert flt is not None
            op = qe.UpdateOperation.delete_points_by_filter(flt)
        with self._using(collection) as sh, edge_errors(f"delete from {collection!r}"):
            sh.shard.update(op)

    def set_payload(self, collection: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        with self._using(collection) as sh, edge_errors(f"payload update in {collection!r}"):
            sh.shard.update(qe.UpdateOperation.set_payload(list(ids), payload))

    def count(self, collection: str, flt: models.Filter | None = None) -> int:
        request = qe.CountRequest(exact=True, filter=cv.filter_(flt))
        with self._using(collection) as sh, edge_errors(f"count of {collection!r}"):
            return int(sh.shard.count(request))

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        *,
        with_payload: bool | Sequence[str] = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> list[models.Record]:
        if not ids:
            return []
        with self._using(collection) as sh, edge_errors(f"retrieve from {collection!r}"):
            found = sh.shard.retrieve(
                list(ids), cv.selection(with_payload), cv.selection(with_vectors)
            )
        return self._decoded(collection, [cv.record(r) for r in found])

    def scroll(
        self,
        collection: str,
        *,
        limit: int,
        offset: Any = None,
        flt: models.Filter | None = None,
        with_payload: bool | Sequence[str] = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> tuple[list[models.Record], Any]:
        request = qe.ScrollRequest(
            offset=offset,
            limit=limit,
            filter=cv.filter_(flt),
            with_payload=cv.selection(with_payload),
            with_vector=cv.selection(with_vectors),
        )
        with self._using(collection) as sh, edge_errors(f"scroll of {collection!r}"):
            records, next_offset = sh.shard.scroll(request)
        return self._decoded(collection, [cv.record(r) for r in records]), next_offset

    def query(self, request: dict[str, Any]) -> list[models.ScoredPoint]:
        collection = request["collection_name"]
        uint8 = self._uint8_of(collection)
        edge_request = cv.query_request(uint8_codec.encode_request(request, uint8))
        with self._using(collection) as sh, edge_errors(f"query of {collection!r}"):
            found = sh.shard.query(edge_request)
        scored = self._decoded(collection, [cv.scored(p) for p in found])
        offset = uint8_codec.top_offset(request, uint8)
        if offset is not None:  # MaxSim over uint8 codes: back on the cosine scale
            for p in scored:
                p.score = uint8_codec.to_cosine_scale(p.score, offset)
        return scored

    def _uint8_of(self, name: str) -> frozenset[str]:
        """The vectors of ``name`` stored as uint8 (``uint8_codec.py``), read once a shard."""
        folder = self._shard(name).folder
        names = self._uint8.get(folder)
        if names is None:
            names = self._uint8[folder] = uint8_codec.uint8_names(self.collection_params(name))
        return names

    def _decoded(self, collection: str, found: list[Any]) -> list[Any]:
        names = self._uint8_of(collection)
        if names:
            for p in found:
                p.vector = uint8_codec.decode_vectors(p.vector, names)
        return found

    def query_groups(self, request: dict[str, Any]) -> list[models.PointGroup]:
        # Edge 0.9 has no grouping query: grouped here (``edge_groups.py``)
        return eg.query_groups(self.query, request)
