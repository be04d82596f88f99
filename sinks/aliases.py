"""Collections served behind aliases, so a full rebuild can switch atomically.

A collection poolq creates is a physical collection ``NAME__<stamp>`` with the alias ``NAME``
pointing at it; writers and searchers use ``NAME``. A rebuild fills a new physical collection and
then repoints the alias in one ``update_collection_aliases`` call, so a search sees the old
collection or the new one, never a half-built one.
"""

from __future__ import annotations

import logging
import re
import secrets
import time

from qdrant_client import QdrantClient, models

from poolq.sinks.schema import CollectionSchema, ensure_collection, resolve_alias

log = logging.getLogger(__name__)
SEPARATOR = "__"


def new_physical_name(alias: str) -> str:
    """``alias__YYYYmmddHHMMSS_xxxx`` (sortable by creation time, unique)."""
    return (
        f"{alias}{SEPARATOR}{time.strftime('%Y%m%d%H%M%S', time.gmtime())}_{secrets.token_hex(2)}"
    )


def physical_collections(client: QdrantClient, alias: str) -> list[str]:
    """Physical collections built for ``alias`` (whether it points at them or not)."""
    pattern = re.compile(re.escape(alias + SEPARATOR) + r"\d{14}_[0-9a-f]{4}$")
    return sorted(c.name for c in client.get_collections().collections if pattern.match(c.name))


def is_alias(client: QdrantClient, name: str) -> bool:
    return any(a.alias_name == name for a in client.get_aliases().aliases)


def ensure_served_collection(client: QdrantClient, schema: CollectionSchema) -> bool:
    """Like :func:`sinks.schema.ensure_collection`, but a missing collection is created behind
    an alias (see the module docstring). An existing collection or alias is only compared."""
    name = schema.name
    if is_alias(client, name) or client.collection_exists(name):
        return ensure_collection(client, schema)
    physical = new_physical_name(name)
    ensure_collection(client, CollectionSchema(physical, schema.vectors))
    try:
        point_alias(client, name, physical)
    except Exception:  # another worker created the alias first: use theirs
        client.delete_collection(physical)
        if not is_alias(client, name):
            raise
    return ensure_collection(client, schema) or True


def point_alias(client: QdrantClient, alias: str, target: str) -> str | None:
    """Point ``alias`` at ``target`` atomically; returns the collection it pointed at before.

    If ``alias`` is a physical collection (made before poolq served collections behind
    aliases), that collection is deleted first and the name is briefly absent."""
    previous = resolve_alias(client, alias)
    was_alias = previous != alias
    ops: list[models.AliasOperations] = []
    if was_alias:
        ops.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
    elif client.collection_exists(alias):
        log.warning(
            "collection %r is a physical collection, not an alias: deleting it to put an alias "
            "in its place (searches fail until the alias exists)",
            alias,
        )
        client.delete_collection(alias)
    ops.append(
        models.CreateAliasOperation(
            create_alias=models.CreateAlias(collection_name=target, alias_name=alias)
        )
    )
    client.update_collection_aliases(change_aliases_operations=ops)
    return previous if was_alias else None
