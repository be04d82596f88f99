"""A Qdrant Edge folder as a Qdrant server keeps it: what the Qdrant endpoint
(``tests/support/qdrant_endpoint``) needs on top of the :class:`~poolq.sinks.store.interface.Store`
interface.

* vectors stored as uint8 as a Qdrant server keeps them, without poolq's code map
  (``uint8_codec``): Edge casts the floats given (``x as u8``) and reads return the codes as
  floats (:meth:`EdgeServerStore._uint8_of` names no vector);
* alias changes applied together, in one atomic step (a server's ``UpdateAliases``);
* payload indexes of any simple type on any field, and the shard's statistics;
* index building turned off and on again on an existing collection (a server's
  ``indexing_threshold = 0``, then back: :meth:`EdgeStore.finish_build`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import qdrant_edge as qe
from qdrant_client import models

from poolq.sinks.store.edge import CollectionNotFoundError, EdgeStore
from poolq.sinks.store.edge_shard import edge_errors
from poolq.sinks.store.errors import EdgeError

_INDEX_TYPES = {
    models.PayloadSchemaType.KEYWORD: qe.PayloadSchemaType.Keyword,
    models.PayloadSchemaType.INTEGER: qe.PayloadSchemaType.Integer,
    models.PayloadSchemaType.FLOAT: qe.PayloadSchemaType.Float,
    models.PayloadSchemaType.BOOL: qe.PayloadSchemaType.Bool,
    models.PayloadSchemaType.DATETIME: qe.PayloadSchemaType.Datetime,
    models.PayloadSchemaType.UUID: qe.PayloadSchemaType.Uuid,
}
_INDEX_NAMES = {str(edge): rest for rest, edge in _INDEX_TYPES.items()} | {
    str(qe.PayloadSchemaType.Geo): models.PayloadSchemaType.GEO,
    str(qe.PayloadSchemaType.Text): models.PayloadSchemaType.TEXT,
}


class EdgeServerStore(EdgeStore):
    """An :class:`EdgeStore` with server semantics and the operations a server has."""

    def _uint8_of(self, name: str) -> frozenset[str]:
        """No vector goes through the uint8 code map: Edge casts, as a server does."""
        return frozenset()

    def edit_aliases(self, edit: Callable[[dict[str, str]], None]) -> None:
        """Change the aliases in one step: ``edit`` changes a copy of the map (alias ->
        collection) in place. If it raises, or the map it leaves names a missing collection
        or uses a collection's name as an alias, nothing changes. ``edit`` runs under the
        store's lock: it must not call the store."""
        with self._mutex:
            aliases = dict(self._catalog.aliases)
            edit(aliases)
            for alias, target in aliases.items():
                if target not in self._catalog.collections:
                    raise CollectionNotFoundError(self._missing(target))
                if alias in self._catalog.collections:
                    raise ValueError(f"{alias!r} is a collection, not an alias")
            if aliases != self._catalog.aliases:
                self._catalog.aliases = aliases
                self._catalog.save()  # renamed into place: the old map or the new one

    def create_field_index(self, name: str, key: str, kind: models.PayloadSchemaType) -> None:
        """Index the payload field ``key`` (idempotent for the same type)."""
        edge_kind = _INDEX_TYPES.get(kind)
        if edge_kind is None:
            raise EdgeError(f"payload index {kind.value!r} on {key!r}: not translated for Edge")
        with self._using(name) as sh, edge_errors(f"payload index {key!r} of {name!r}"):
            sh.shard.update(qe.UpdateOperation.create_field_index(key, edge_kind))

    def shard_info(self, name: str) -> Any:
        """Edge's ``ShardInfo`` of a collection: points, segments, indexed vectors."""
        with self._using(name) as sh, edge_errors(f"info of {name!r}"):
            return sh.shard.info()

    def payload_schema(self, name: str) -> dict[str, models.PayloadIndexInfo]:
        """The payload indexes of a collection, as a server lists them."""
        return {
            key: models.PayloadIndexInfo(
                data_type=_INDEX_NAMES.get(str(info.data_type), models.PayloadSchemaType.KEYWORD),
                points=info.points,
            )
            for key, info in self.shard_info(name).payload_schema.items()
        }

    def indexing_deferred(self, name: str) -> bool:
        """Whether index building is off (until :meth:`finish_build`)."""
        return self._shard(name).deferred

    def defer_indexing(self, name: str) -> None:
        """Turn index building off on an existing collection (the shard is reloaded)."""
        if not self.indexing_deferred(name):
            self._reload(name, defer_indexing=True)
