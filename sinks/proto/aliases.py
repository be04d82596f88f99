"""``ListAliases`` as protobuf, for the server store's alias lookup.

Every upsert asks which collection its alias names now (``ClientStore._uint8_of``: a rebuild may
point the alias at a collection that stores its vectors as uint8), so every job makes this call.
Through qdrant-client it passes its interceptors and becomes pydantic models (about 0.23 ms of
CPU a call on this project's 2-core VM); here the empty request is sent on the store's own
channel and the generated ``ListAliasesResponse`` read straight into the map (about 0.17 ms).
``tests/sinks/test_proto_aliases.py`` checks that both give the same map.
"""

from __future__ import annotations

from qdrant_client.grpc import collections_pb2

LIST_ALIASES_METHOD = "/qdrant.Collections/ListAliases"
LIST_ALIASES_REQUEST = b""  # ListAliasesRequest has no fields (a timeout only, left unset)


def alias_map(response: collections_pb2.ListAliasesResponse) -> dict[str, str]:
    """Alias name -> the collection it points to."""
    return {a.alias_name: a.collection_name for a in response.aliases}
