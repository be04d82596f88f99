"""The one store interface: what jobs, reindexing, search, the tests' audit, the inventory and
export/import ask of Qdrant, whichever backend holds the points.

Requests are built once, as qdrant-client models (points, filters, selectors, ``query_points``
keyword arguments, collection parameters); :class:`~poolq.sinks.store.client.ClientStore`
passes them to a Qdrant server as they are, and :class:`~poolq.sinks.store.edge.EdgeStore`
translates them for Qdrant Edge. The writer hands points over as the sink's records
(:meth:`Store.upsert_records`): a server over gRPC (``server.py``) encodes them from their
arrays without building models at all. Results come back as qdrant-client models too
(``models.Record``, ``models.ScoredPoint``, ``models.CollectionParams``) with string ids.

Names: a collection is physical or an alias that points at one; every method that takes a
collection accepts either (``resolve`` says which physical collection an alias names).
Methods are blocking: the writer calls them in its own threads (see ``sinks/writer.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from qdrant_client import models

from poolq.sinks.points import PointRecord, to_point_struct
from poolq.sinks.schema import CollectionSchema

Selector = models.PointIdsList | models.FilterSelector


class Store(ABC):
    """A Qdrant backend (see the module docstring)."""

    #: numpy arrays may be given as vectors (else they become lists first)
    accepts_arrays: bool = False
    #: reads may run in a thread of their own, concurrently with writes
    concurrent_reads: bool = False
    #: upserts the writer may have in flight at once, each in a thread of its own (a server:
    #: several; an embedded folder: one, as its writes hold the interpreter or a pipe)
    write_concurrency: int = 1

    # -- names -------------------------------------------------------------------------------

    @abstractmethod
    def collections(self) -> list[str]:
        """Names of the physical collections."""

    @abstractmethod
    def aliases(self) -> dict[str, str]:
        """Alias -> the physical collection it points at."""

    def resolve(self, name: str) -> str:
        """The collection ``name`` points to when it is an alias, else ``name`` itself."""
        return self.aliases().get(name, name)

    def exists(self, name: str) -> bool:
        """Whether ``name`` is a physical collection or an alias of one."""
        return self.resolve(name) in self.collections()

    @abstractmethod
    def switch_alias(self, alias: str, target: str) -> None:
        """Point ``alias`` at the physical collection ``target`` in one atomic step (creating
        the alias if needed): a reader sees the old target or the new one, never neither."""

    # -- collections -------------------------------------------------------------------------

    @abstractmethod
    def create_collection(
        self, name: str, schema: CollectionSchema, *, defer_indexing: bool = False
    ) -> bool:
        """Create the physical collection ``name`` with ``schema``'s vectors and settings and
        the payload indexes of ``sinks/collection_config.py``; False if it already existed
        (another worker created it first). ``defer_indexing`` loads without building vector
        indexes until :meth:`finish_build`."""

    def create_for_import(self, name: str, schema: CollectionSchema) -> None:
        """Create the physical collection ``name`` for a bulk load that nothing names until
        :meth:`finish_build` returns (``poolq import``): indexing deferred, and where the
        backend can, writes not logged one by one (a failed load is deleted whole)."""
        self.create_collection(name, schema, defer_indexing=True)

    @abstractmethod
    def finish_build(self, name: str) -> None:
        """Build the indexes a collection created with ``defer_indexing`` put off, blocking
        until they are built (Edge: ``optimize()``; a server: its optimizer config restored,
        then green). May run in any thread, concurrently with other calls."""

    @abstractmethod
    def collection_params(self, name: str) -> models.CollectionParams:
        """The stored parameters of a collection (an alias is resolved), for comparison with
        a schema and for export."""

    @abstractmethod
    def ensure_payload_indexes(self, name: str) -> None:
        """Add any missing payload index of ``sinks/collection_config.py`` (idempotent)."""

    @abstractmethod
    def delete_collection(self, name: str) -> None:
        """Delete a physical collection and its points."""

    # -- points ------------------------------------------------------------------------------

    @abstractmethod
    def upsert(self, collection: str, points: Sequence[models.PointStruct]) -> None:
        """Insert or overwrite points; durable when it returns."""

    def upsert_records(self, collection: str, records: Sequence[PointRecord]) -> None:
        """:meth:`upsert` of the sink's point records (what the writer calls): a backend that
        can build its request from the records' arrays directly overrides it."""
        self.upsert(collection, [to_point_struct(r, arrays_ok=True) for r in records])

    @abstractmethod
    def delete(self, collection: str, selector: Selector) -> None:
        """Delete points by id or by filter; durable when it returns."""

    @abstractmethod
    def set_payload(self, collection: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Overwrite the top-level ``payload`` keys of the points ``ids``."""

    @abstractmethod
    def count(self, collection: str, flt: models.Filter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""

    @abstractmethod
    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        *,
        with_payload: bool | Sequence[str] = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> list[models.Record]:
        """The points with these ids that exist."""

    @abstractmethod
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
        """One page of points in id order, and the offset of the next page (None at the end)."""

    @abstractmethod
    def query(self, request: dict[str, Any]) -> list[models.ScoredPoint]:
        """Run one Query API request: ``request`` holds the keyword arguments of
        ``QdrantClient.query_points`` (see ``sinks/query.py``)."""

    @abstractmethod
    def query_groups(self, request: dict[str, Any]) -> list[models.PointGroup]:
        """Run one grouped Query API request: ``request`` holds the keyword arguments of
        ``QdrantClient.query_points_groups`` (``group_by``, ``group_size``, ``limit`` groups).
        Groups come best first, each with its hits best first."""

    # -- lifecycle ---------------------------------------------------------------------------

    def maintain(self) -> None:  # noqa: B027 - optional: most backends have nothing to do
        """Housekeeping after writes (Edge: builds indexes now and then); cheap when idle."""

    def settle(self) -> None:  # noqa: B027 - optional: most backends have nothing to do
        """Wait until the housekeeping :meth:`maintain` started is done."""

    @abstractmethod
    def close(self) -> None:
        """Release the store (and, for a folder, its lock)."""
