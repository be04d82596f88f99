"""The server path's fixtures: one Qdrant endpoint (``tests/support/qdrant_endpoint``, a
Qdrant-protocol gRPC server over a Qdrant Edge folder), one Redis and one ``poolq worker`` on
the endpoint's ``grpc://`` URL, shared by the package's modules (each writes collections of its
own names); and the search corpus ingested once through that worker. A module that kills the
endpoint starts its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.integration.server.helpers import ingest, search_corpus
from tests.support.endpoint_process import EndpointProcess

SEARCH_COLLECTION = "kb"


@pytest.fixture(scope="package")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("server")


@pytest.fixture(scope="package")
def endpoint(workdir):
    with EndpointProcess(workdir / "endpoint") as ep:
        yield ep


@pytest.fixture(scope="package")
def redis_url(workdir):
    with LocalRedis(workdir / "redis") as server:
        yield server.url


@pytest.fixture(scope="package")
def worker(redis_url, endpoint, workdir):
    """``poolq worker --qdrant-url grpc://127.0.0.1:PORT``; it reads reindex sources under
    ``workdir``."""
    env = {"POOLQ_SOURCE_ROOTS": str(workdir)}
    with WorkerProcess(redis_url, workdir / "worker", env=env, qdrant_url=endpoint.url) as w:
        yield w


@pytest.fixture(scope="package")
def kb(worker, redis_url):
    """The search corpus, ingested through the server worker: its outcomes."""
    return ingest(redis_url, SEARCH_COLLECTION, search_corpus())
