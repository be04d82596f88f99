"""The store through qdrant-client: a Qdrant server over REST (``qdrant_transport = "rest"``;
over gRPC, :class:`~poolq.sinks.store.server.GrpcStore` builds on this class), or a
qdrant-client local-mode folder, which only ``poolq export`` opens (to move an old embedded
store onto Qdrant Edge) and the tests use as an independent oracle.

Requests are the qdrant-client models they were built as, passed on unchanged. Every write
waits (``wait=True``): it has been applied when the call returns. Errors are told apart by
HTTP status, a gRPC status mapped onto the same meaning (:func:`_status`).

No Qdrant server can run on the machines this was written on: the gRPC path is tested against
the tests' Qdrant-protocol endpoint (``tests/support/qdrant_endpoint``, Qdrant Edge behind Qdrant's own
gRPC services); REST only through qdrant-client's local mode (which ignores sharding,
quantization, on-disk storage and optimizer settings), never against a real server.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from poolq.sinks import collection_config as cc
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.store import uint8_codec
from poolq.sinks.store.errors import StoreLockedError
from poolq.sinks.store.interface import Selector, Store

log = logging.getLogger(__name__)
DEFAULT_INDEXING_THRESHOLD_KB = 10_000  # Qdrant's documented default
GREEN_TIMEOUT_S = 3600.0


def open_local_mode(path: Path) -> QdrantClient:
    """A qdrant-client local-mode folder (for ``poolq export``), refused clearly when a process
    (a worker of an older poolq) holds it."""
    try:
        return QdrantClient(path=str(path))
    except RuntimeError as e:
        if "already accessed" not in str(e):
            raise
        raise StoreLockedError(
            f"the local-mode folder {str(path)!r} is held by another process (a running "
            "worker?); stop it first"
        ) from None


class ClientStore(Store):
    def __init__(self, client: QdrantClient, *, description: str, local: bool = False) -> None:
        self.client = client
        self.local = local  # local mode: no payload indexes, no server-only settings
        self.accepts_arrays = local  # local mode keeps numpy arrays (np.asarray) as they are
        self.description = description
        self._indexing_threshold: dict[str, int] = {}  # deferred builds: what to restore
        self._uint8: dict[str, frozenset[str]] = {}  # physical collection -> uint8 vectors

    def __repr__(self) -> str:  # never shows an api key
        return f"ClientStore({self.description})"

    # -- names -------------------------------------------------------------------------------

    def collections(self) -> list[str]:
        return sorted(c.name for c in self.client.get_collections().collections)

    def aliases(self) -> dict[str, str]:
        try:
            found = self.client.get_aliases().aliases
        except (UnexpectedResponse, grpc.RpcError) as e:
            if forbidden(e):  # a key scoped to collections; the server resolves
                return {}
            raise
        return {a.alias_name: a.collection_name for a in found}

    def exists(self, name: str) -> bool:
        return self.client.collection_exists(self.resolve(name))

    def switch_alias(self, alias: str, target: str) -> None:
        ops: list[models.AliasOperations] = []
        if alias in self.aliases():
            ops.append(
                models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias))
            )
        ops.append(
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(collection_name=target, alias_name=alias)
            )
        )
        self.client.update_collection_aliases(change_aliases_operations=ops)  # one atomic call

    # -- collections -------------------------------------------------------------------------

    def create_collection(
        self, name: str, schema: CollectionSchema, *, defer_indexing: bool = False
    ) -> bool:
        sparse = cc.sparse_vectors_config(schema)
        extra = {} if self.local else cc.server_options(schema.settings)
        try:
            self.client.create_collection(
                name,
                vectors_config=cc.vectors_config(schema),
                sparse_vectors_config=sparse or None,
                **extra,
            )
        except (UnexpectedResponse, grpc.RpcError) as e:
            if _status(e) == 409:  # another worker created it first: compare instead
                return False
            raise
        if defer_indexing and not self.local:
            info = self.client.get_collection(name)
            threshold = info.config.optimizer_config.indexing_threshold
            self._indexing_threshold[name] = (
                DEFAULT_INDEXING_THRESHOLD_KB if threshold is None else threshold
            )
            self.client.update_collection(name, optimizers_config=cc.DEFERRED_INDEXING)
        self.ensure_payload_indexes(name)
        return True

    def finish_build(self, name: str) -> None:
        if self.local:
            return
        threshold = self._indexing_threshold.pop(name, DEFAULT_INDEXING_THRESHOLD_KB)
        self.client.update_collection(
            name, optimizers_config=models.OptimizersConfigDiff(indexing_threshold=threshold)
        )
        deadline = time.monotonic() + GREEN_TIMEOUT_S
        while True:
            status = self.client.get_collection(name).status
            if status == models.CollectionStatus.GREEN:
                return
            if status == models.CollectionStatus.RED:
                raise RuntimeError(f"collection {name!r} turned red while building its indexes")
            if time.monotonic() > deadline:
                raise TimeoutError(f"collection {name!r} not green after {GREEN_TIMEOUT_S:.0f}s")
            if status == models.CollectionStatus.GREY:  # optimizations wait for a trigger
                self.client.update_collection(name, optimizers_config=models.OptimizersConfigDiff())
            time.sleep(1.0)

    def collection_params(self, name: str) -> models.CollectionParams:
        return self.client.get_collection(self.resolve(name)).config.params

    def ensure_payload_indexes(self, name: str) -> None:
        if self.local:  # local mode has no payload indexes and warns about them
            return
        target = self.resolve(name)
        have = self.client.get_collection(target).payload_schema or {}
        for field, kind in cc.PAYLOAD_INDEXES.items():
            if field not in have:
                self.client.create_payload_index(target, field, field_schema=kind, wait=True)

    def delete_collection(self, name: str) -> None:
        self.client.delete_collection(name)
        self._uint8.pop(name, None)

    # -- points ------------------------------------------------------------------------------

    def upsert(self, collection: str, points: Sequence[models.PointStruct]) -> None:
        points = uint8_codec.encode_points(
            points, self._uint8_of(collection), arrays_ok=self.accepts_arrays
        )
        self.client.upsert(collection, points=list(points), wait=True)

    def delete(self, collection: str, selector: Selector) -> None:
        self.client.delete(collection, points_selector=selector, wait=True)

    def set_payload(self, collection: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        self.client.set_payload(
            collection, payload=payload, points=models.PointIdsList(points=list(ids)), wait=True
        )

    def count(self, collection: str, flt: models.Filter | None = None) -> int:
        return self.client.count(collection, count_filter=flt, exact=True).count

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        *,
        with_payload: bool | Sequence[str] = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> list[models.Record]:
        found = self.client.retrieve(
            collection,
            ids=list(ids),
            with_payload=_names(with_payload),
            with_vectors=_names(with_vectors),
        )
        return self._decoded(collection, found, with_vectors)

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
        found, next_offset = self.client.scroll(
            collection,
            scroll_filter=flt,
            limit=limit,
            offset=offset,
            with_payload=_names(with_payload),
            with_vectors=_names(with_vectors),
        )
        return self._decoded(collection, found, with_vectors), next_offset

    def query(self, request: dict[str, Any]) -> list[models.ScoredPoint]:
        uint8 = self._uint8_of(request["collection_name"])
        found = self.client.query_points(**uint8_codec.encode_request(request, uint8)).points
        offset = uint8_codec.top_offset(request, uint8)
        if offset is not None:  # MaxSim over uint8 codes: back on the cosine scale
            found = [
                p.model_copy(update={"score": uint8_codec.to_cosine_scale(p.score, offset)})
                for p in found
            ]
        return self._decoded(request["collection_name"], found, request.get("with_vectors"))

    def _uint8_of(self, name: str) -> frozenset[str]:
        """The vectors of ``name`` stored as uint8 (``uint8_codec.py``). An alias is resolved
        on every call (one request): a rebuild may point it at a collection stored otherwise;
        a physical collection's datatypes never change, so they are asked for once."""
        physical = self.resolve(name)
        names = self._uint8.get(physical)
        if names is None:
            names = self._uint8[physical] = uint8_codec.uint8_names(
                self.collection_params(physical)
            )
        return names

    def _decoded(self, collection: str, found: list[Any], with_vectors: Any) -> list[Any]:
        if not with_vectors:
            return found
        names = self._uint8_of(collection)
        if names:
            found = [
                p.model_copy(update={"vector": uint8_codec.decode_vectors(p.vector, names)})
                for p in found
            ]
        return found

    def query_groups(self, request: dict[str, Any]) -> list[models.PointGroup]:
        # Qdrant groups it (a server: prefetch limits times ``limit``, then rounds that skip
        # filled groups; local mode: every point, grouped)
        return self.client.query_points_groups(**request).groups

    def close(self) -> None:
        self.client.close()


_GRPC_AS_HTTP = {
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
}


def forbidden(e: Exception) -> bool:
    """Whether ``e`` says the key may not do this (401 or 403, or gRPC's equivalents)."""
    return _status(e) in (401, 403)


def _status(e: Exception) -> int | None:
    """The HTTP status of a REST error, or what a gRPC status means in those terms."""
    if isinstance(e, UnexpectedResponse):
        return e.status_code
    code = getattr(e, "code", None)
    if callable(code):
        return _GRPC_AS_HTTP.get(code())
    return None


def _names(x: bool | Sequence[str]) -> bool | list[str]:
    return x if isinstance(x, bool) else list(x)
