"""The Collections service: create, describe, list, update (index building: ``builds.py``),
delete, aliases.

A collection is one Qdrant Edge shard of the folder (``EdgeServerStore``). Its ``config.params``
are the ones it was created with, as Edge keeps them (``EdgeStore.collection_params``), with
one shard and one replica; the HNSW, WAL and optimizer values around them are Qdrant's
defaults, reported, not settings (but ``indexing_threshold``: ``builds.py``).
"""

from __future__ import annotations

from qdrant_client import grpc, models
from qdrant_client.conversions.conversion import GrpcToRest as G
from qdrant_client.conversions.conversion import RestToGrpc as R
from qdrant_client.grpc.collections_service_pb2_grpc import CollectionsServicer

from poolq.sinks.store.edge import CollectionNotFoundError
from poolq.sinks.store.edge_params import INDEX_THREADS
from tests.support.edge_server import EdgeServerStore
from tests.support.qdrant_endpoint import convert as cv
from tests.support.qdrant_endpoint.builds import IndexBuilds
from tests.support.qdrant_endpoint.status import (
    already_exists,
    invalid,
    missing_collection,
    not_found,
    refuse,
    rpc,
    unsupported,
)

# set in a request, refused: what Edge's shard config cannot keep per collection
_CREATE_REFUSED = (
    "hnsw_config", "quantization_config", "sharding_method", "strict_mode_config", "payload",
    "id_tracker",
)  # fmt: skip
_UPDATE_REFUSED = (
    "params", "hnsw_config", "vectors_config", "quantization_config", "sparse_vectors_config",
    "strict_mode_config",
)  # fmt: skip


class CollectionsService(CollectionsServicer):
    def __init__(self, store: EdgeServerStore) -> None:
        self.store = store
        self.builds = IndexBuilds(store)

    # -- collections -------------------------------------------------------------------------

    @rpc
    def Create(self, request: grpc.CreateCollection) -> grpc.CollectionOperationResponse:
        name = request.collection_name
        if not name:
            raise invalid("Validation error in body: collection_name must not be empty")
        refuse(request, *_CREATE_REFUSED)
        if request.metadata:
            raise unsupported("CreateCollection.metadata")
        for field in ("shard_number", "replication_factor", "write_consistency_factor"):
            value = getattr(request, field)
            if value not in (0, 1):  # 0: not given
                raise unsupported(f"{field} {value} (one shard, one node)")
        if name in self.store.collections():  # before the parameters, as a server checks
            raise already_exists(f"Wrong input: Collection `{name}` already exists!")
        vectors: dict[str, models.VectorParams] = {}
        if request.HasField("vectors_config"):
            found = G.convert_vectors_config(request.vectors_config)
            vectors = dict(found) if isinstance(found, dict) else {cv.UNNAMED: found}
        sparse = {}
        if request.HasField("sparse_vectors_config"):
            sparse = G.convert_sparse_vector_config(request.sparse_vectors_config)
        threshold = None
        if request.HasField("optimizers_config"):
            threshold = G.convert_optimizers_config_diff(
                request.optimizers_config
            ).indexing_threshold
        if name in self.store.aliases():
            raise invalid(f"Can't create collection with name {name}: an alias has that name")
        if not self.store.create_from_params(name, vectors, sparse, defer_indexing=threshold == 0):
            raise already_exists(f"Wrong input: Collection `{name}` already exists!")
        self.builds.forget(name)
        if threshold:
            self.builds.set_threshold(name, threshold)
        return grpc.CollectionOperationResponse(result=True)

    @rpc
    def Get(self, request: grpc.GetCollectionInfoRequest) -> grpc.GetCollectionInfoResponse:
        return grpc.GetCollectionInfoResponse(
            result=R.convert_collection_info(self.info(request.collection_name))
        )

    def info(self, name: str) -> models.CollectionInfo:
        """A collection's (or an alias's) description, as a server gives it."""
        physical = self._physical(name)
        params = self.store.collection_params(physical)
        vectors = dict(params.vectors) if isinstance(params.vectors, dict) else {}
        stats = self.store.shard_info(physical)
        status, optimizer_status = self.builds.status(physical)
        return models.CollectionInfo(
            status=status,
            optimizer_status=optimizer_status,
            segments_count=stats.segments_count,
            points_count=stats.points_count,
            indexed_vectors_count=stats.indexed_vectors_count,
            payload_schema=self.store.payload_schema(physical),
            config=models.CollectionConfig(
                params=models.CollectionParams(
                    vectors=vectors[cv.UNNAMED] if list(vectors) == [cv.UNNAMED] else vectors,
                    sparse_vectors=params.sparse_vectors or None,
                    shard_number=1,
                    replication_factor=1,
                    write_consistency_factor=1,
                    on_disk_payload=False,
                ),
                hnsw_config=models.HnswConfig(
                    m=16,
                    ef_construct=100,
                    full_scan_threshold=10_000,
                    max_indexing_threads=INDEX_THREADS,
                ),
                optimizer_config=models.OptimizersConfig(
                    default_segment_number=0,
                    indexing_threshold=self.builds.threshold(physical),
                    flush_interval_sec=5,
                ),
                wal_config=models.WalConfig(wal_capacity_mb=32, wal_segments_ahead=0),
            ),
        )

    @rpc
    def List(self, request: grpc.ListCollectionsRequest) -> grpc.ListCollectionsResponse:
        names = self.store.collections()
        return grpc.ListCollectionsResponse(
            collections=[grpc.CollectionDescription(name=n) for n in names]
        )

    @rpc
    def CollectionExists(
        self, request: grpc.CollectionExistsRequest
    ) -> grpc.CollectionExistsResponse:
        exists = self.store.exists(request.collection_name)
        return grpc.CollectionExistsResponse(result=grpc.CollectionExists(exists=exists))

    @rpc
    def Update(self, request: grpc.UpdateCollection) -> grpc.CollectionOperationResponse:
        physical = self._physical(request.collection_name)
        refuse(request, *_UPDATE_REFUSED)
        if request.metadata:
            raise unsupported("UpdateCollection.metadata")
        if request.HasField("optimizers_config"):
            diff = G.convert_optimizers_config_diff(request.optimizers_config)
            if diff.indexing_threshold is not None:
                self.builds.set_threshold(physical, diff.indexing_threshold)
        return grpc.CollectionOperationResponse(result=True)

    @rpc
    def Delete(self, request: grpc.DeleteCollection) -> grpc.CollectionOperationResponse:
        name = request.collection_name
        try:
            self.store.delete_collection(name)  # its aliases go with it
        except CollectionNotFoundError:
            return grpc.CollectionOperationResponse(result=False)  # as a server answers
        self.builds.forget(name)
        return grpc.CollectionOperationResponse(result=True)

    # -- aliases -----------------------------------------------------------------------------

    @rpc
    def UpdateAliases(self, request: grpc.ChangeAliases) -> grpc.CollectionOperationResponse:
        """All the actions in one atomic step (a server applies them one by one)."""
        actions = [G.convert_alias_operations(a) for a in request.actions]
        collections = set(self.store.collections())
        for a in actions:
            if (
                isinstance(a, models.CreateAliasOperation)
                and a.create_alias.alias_name in collections
            ):
                raise already_exists(
                    f"Wrong input: Collection `{a.create_alias.alias_name}` already exists!"
                )

        def edit(aliases: dict[str, str]) -> None:
            for a in actions:
                if isinstance(a, models.CreateAliasOperation):
                    aliases[a.create_alias.alias_name] = a.create_alias.collection_name
                elif isinstance(a, models.DeleteAliasOperation):
                    aliases.pop(a.delete_alias.alias_name, None)
                else:
                    old, new = a.rename_alias.old_alias_name, a.rename_alias.new_alias_name
                    if old not in aliases:
                        raise not_found(f"Not found: Alias {old} does not exists!")
                    aliases[new] = aliases.pop(old)

        self.store.edit_aliases(edit)
        return grpc.CollectionOperationResponse(result=True)

    @rpc
    def ListAliases(self, request: grpc.ListAliasesRequest) -> grpc.ListAliasesResponse:
        return grpc.ListAliasesResponse(aliases=_descriptions(self.store.aliases()))

    @rpc
    def ListCollectionAliases(
        self, request: grpc.ListCollectionAliasesRequest
    ) -> grpc.ListAliasesResponse:
        physical = self._physical(request.collection_name)
        mine = {a: t for a, t in self.store.aliases().items() if t == physical}
        return grpc.ListAliasesResponse(aliases=_descriptions(mine))

    def _physical(self, name: str) -> str:
        physical = self.store.resolve(name)
        if physical not in self.store.collections():
            raise missing_collection(name)
        return physical


def _descriptions(aliases: dict[str, str]) -> list[grpc.AliasDescription]:
    return [
        grpc.AliasDescription(alias_name=a, collection_name=t) for a, t in sorted(aliases.items())
    ]
