"""Qdrant's gRPC messages written as protobuf wire bytes straight from numpy arrays and Python
values: the write path's encoder (``upsert.py``), with no protobuf object, pydantic model or
Python float per vector element. ``protobuf_format.py`` holds the wire format's primitives, ``payload.py``
the JSON payload as ``map<string, Value>``. The field numbers are those of qdrant-client's
``proto/points.proto``, ``json_with_int.proto`` and ``qdrant_common.proto``; the equivalence
test parses what this writes with qdrant-client's generated classes."""
