"""Qdrant's gRPC requests without qdrant-client's models: upserts written as protobuf wire bytes
straight from numpy arrays (``upsert.py``, on ``protobuf_format.py`` and ``payload.py``), and the
lookups by id and the alias list through the generated messages (``get.py``, ``aliases.py``)."""
