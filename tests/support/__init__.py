"""Test stand-ins shared by the tests and the benchmarks (``from tests.support...``), kept out of
the installed package: the Qdrant-protocol endpoint over a Qdrant Edge folder
(``qdrant_endpoint/``, its child process ``endpoint_process.py`` and its store
``edge_server.py``), the reference MaxSim (``maxsim.py``) and a real Redis's command counts
(``redis_stats.py``)."""
