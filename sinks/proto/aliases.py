"""``ListAliases`` as protobuf, for the server store's alias lookup.

Every upsert asks which collection its alias names now (``ClientStore._uint8_of``: a rebuild may
point the alias at a collection that stores its vectors as uint8), so every job makes this call:
sent on the store's own channel, not through qdrant-client's interceptors and pydantic models.
``tests/sinks/test_proto_aliases.py`` checks that both give the same map.
"""

from __future__ import annotations

from qdrant_client.grpc import collections_pb2

LIST_ALIASES_METHOD = "/qdrant.Collections/ListAliases"
LIST_ALIASES_REQUEST = b""  # ListAliasesRequest has no fields (a timeout only, left unset)


def alias_map(response: collections_pb2.ListAliasesResponse) -> dict[str, str]:
    """Alias name -> the collection it points to."""
    return {a.alias_name: a.collection_name for a in response.aliases}
