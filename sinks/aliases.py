"""Collections served behind aliases, so a full rebuild can switch atomically.

A collection poolq creates is a physical collection ``NAME__<stamp>`` with the alias ``NAME``
pointing at it; writers and searchers use ``NAME``. A rebuild fills a new physical collection,
builds its indexes, then repoints the alias in one atomic step (a server's
``update_collection_aliases`` call; on Qdrant Edge, the catalog renamed into place), so a search
sees the old collection or the new one, never a half-built one and never none.
"""

from __future__ import annotations

import logging
import re
import secrets
import time

from poolq.sinks.collections import ensure_collection
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.store.interface import Store

log = logging.getLogger(__name__)
SEPARATOR = "__"


def new_physical_name(alias: str) -> str:
    """``alias__YYYYmmddHHMMSS_xxxx`` (sortable by creation time, unique)."""
    return (
        f"{alias}{SEPARATOR}{time.strftime('%Y%m%d%H%M%S', time.gmtime())}_{secrets.token_hex(2)}"
    )


def physical_collections(store: Store, alias: str) -> list[str]:
    """Physical collections built for ``alias`` (whether it points at them or not)."""
    pattern = re.compile(re.escape(alias + SEPARATOR) + r"\d{14}_[0-9a-f]{4}$")
    return sorted(c for c in store.collections() if pattern.match(c))


def ensure_served_collection(store: Store, schema: CollectionSchema) -> bool:
    """Like :func:`sinks.collections.ensure_collection`, but a missing collection is created
    behind an alias (see the module docstring). An existing collection or alias is only
    compared."""
    name = schema.name
    if name in store.aliases() or store.exists(name):
        return ensure_collection(store, schema)
    physical = new_physical_name(name)
    ensure_collection(store, schema.renamed(physical))
    try:
        store.switch_alias(name, physical)
    except Exception:  # another worker created the alias first: use theirs
        store.delete_collection(physical)
        if name not in store.aliases():
            raise
    return ensure_collection(store, schema) or True


def point_alias(store: Store, alias: str, target: str) -> str | None:
    """Point ``alias`` at ``target`` atomically; returns the collection it pointed at before.

    If ``alias`` is a physical collection (made before poolq served collections behind
    aliases), that collection is deleted first and the name is briefly absent."""
    aliases = store.aliases()
    previous = aliases.get(alias)
    if previous is None and alias in store.collections():
        log.warning(
            "collection %r is a physical collection, not an alias: deleting it to put an alias "
            "in its place (searches fail until the alias exists)",
            alias,
        )
        store.delete_collection(alias)
    store.switch_alias(alias, target)
    return previous
