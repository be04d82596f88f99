"""A Qdrant-protocol gRPC endpoint over a Qdrant Edge folder: a stand-in Qdrant server for the
tests and benchmarks of the server path (``sinks/store/client.py``), where no Qdrant server
binary can run. ``python -m tests.support.qdrant_endpoint --path DIR --port PORT``; a client
connects with ``QdrantClient(host=..., grpc_port=PORT, prefer_grpc=True,
check_compatibility=False)``. Points are kept by poolq's own store code
(``tests/support/edge_server.py``, an ``EdgeStore``), so a restart on the same folder finds every
acknowledged write (Edge's WAL).

Served (what qdrant-client sends for them): Collections ``Create``, ``Get``, ``List``,
``CollectionExists``, ``Update`` (the optimizers' ``indexing_threshold``), ``Delete``,
``UpdateAliases``, ``ListAliases``, ``ListCollectionAliases``; Points ``Upsert``, ``Delete``,
``Get``, ``SetPayload``, ``CreateFieldIndex``, ``Scroll``, ``Count``, ``Query``,
``QueryGroups``; Qdrant ``HealthCheck``. Any other call answers UNIMPLEMENTED.

Where it differs from a real Qdrant server:

* one node, one shard, no replicas: ``shard_number``, ``replication_factor`` and
  ``write_consistency_factor`` other than 1 are refused; no cluster, snapshot or shard-key calls;
* gRPC only (no REST port), no TLS; no auth unless ``--api-key`` is given (then every call
  must carry it); an ``api-key`` header is otherwise accepted and ignored;
* what Qdrant Edge 0.9 (and poolq's translation of requests for it, ``edge_convert.py`` and
  ``edge_params.py``) does not cover is refused with INVALID_ARGUMENT naming it: collection-level
  HNSW or quantization settings, quantization other than scalar int8, query types other than
  nearest / RRF / DBSF, MMR, ``lookup_from``, ``with_lookup``, ``order_by``, conditional upserts,
  nested payload keys in ``set_payload``, server-side inference, geo and ``values_count``
  filters; search parameters (``hnsw_ef``, ``exact``) are ignored;
* grouped queries are grouped by poolq (``sinks/store/edge_groups.py``), not by Qdrant's own
  algorithm: the groups can differ where fusion and a deep candidate pool meet;
* writes are applied before the answer whatever ``wait`` says; counts are always exact;
  ``SetPayload`` by filter updates the points the filter matched a moment before;
* collections: ``UpdateAliases`` applies all its actions or none; vector indexes are built by
  poolq's maintenance (every 8,192 points written) and, after ``indexing_threshold`` went to 0,
  when it is set back (YELLOW until done); an ``indexing_threshold`` other than 0 is only
  reported back (until a restart), it does not change when Edge indexes; the HNSW, WAL and
  optimizer values reported are Qdrant's defaults, not settings.
"""
