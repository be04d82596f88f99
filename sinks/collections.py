"""Create a missing collection, or check that an existing one matches its schema.

An existing collection (or the collection an alias points to) is never deleted, recreated or
reconfigured; only its missing payload indexes are added.
"""

from __future__ import annotations

from poolq.sinks.schema import CollectionSchema, SchemaMismatchError
from poolq.sinks.schema_diff import schema_differences
from poolq.sinks.store.interface import Store

REBUILD_HINT = (
    "rebuild it with `poolq reindex --full` (or set the profile's [vectors] / [collection] "
    "back to what the collection has)"
)


def ensure_collection(store: Store, schema: CollectionSchema) -> bool:
    """Create the collection (True), or check that the existing one matches (False).

    ``schema.name`` may be an alias. Raises :class:`SchemaMismatchError` saying what differs
    (vectors and ``[collection]`` settings)."""
    target = store.resolve(schema.name)
    if not store.exists(target) and store.create_collection(target, schema):
        return True
    check_collection(store, schema, target)
    store.ensure_payload_indexes(target)
    return False


def check_collection(store: Store, schema: CollectionSchema, target: str | None = None) -> None:
    """Raise :class:`SchemaMismatchError` if the existing collection differs from ``schema``."""
    target = target or store.resolve(schema.name)
    problems = schema_differences(schema, store.collection_params(target))
    if problems:
        where = repr(target) if target == schema.name else f"{target!r} (alias {schema.name!r})"
        raise SchemaMismatchError(
            f"collection {where} does not match the schema: "
            + "; ".join(problems)
            + f" — {REBUILD_HINT}"
        )
