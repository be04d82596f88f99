"""Searches a worker refuses instead of answering with nothing: a filter on a field no document
of the collection has, a range on a field that holds no numbers, a collection that does not
exist. Each refusal names what was wrong and what exists. Real redis-server, real worker, the
real client and the real ``poolq search`` command."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from poolq.ingest.client import SyncPoolqClient
from poolq.wire.search_results import SearchError
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow
COLLECTION = "papers"
DOCS = [
    {"id": "p1", "text": "Vector search with learned sparse retrieval.", "metadata": {"lang": "en", "year": 2021, "venue": {"name": "SIGIR"}}},
    {"id": "p2", "text": "Late interaction over contextual token embeddings.", "metadata": {"lang": "en", "year": 2020}},
    {"id": "p3", "text": "Dichte Suche mit Transformern.", "metadata": {"lang": "de", "year": 2022}},
]  # fmt: skip


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("refusals")
    server = LocalRedis(tmp / "redis").start()
    worker = WorkerProcess(server.url, tmp / "qdrant").start()
    client = SyncPoolqClient(server.url)
    outcomes = client.wait(client.enqueue(COLLECTION, DOCS), timeout_s=300)
    assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]
    yield server, client
    client.close()
    worker.stop()
    server.stop()


def search(client, *filters, collection=COLLECTION):
    return client.search("retrieval", collection, mode="dense", limit=10, filters=list(filters))


def test_filters_on_known_fields_still_work(env):
    _, client = env
    assert {h.doc_id for h in search(client, "lang=en").hits} == {"p1", "p2"}
    assert {h.doc_id for h in search(client, "year>=2021").hits} == {"p1", "p3"}
    assert {h.doc_id for h in search(client, "venue.name=SIGIR").hits} == {"p1"}
    assert {h.doc_id for h in search(client, "metadata.lang=de").hits} == {"p3"}
    # the payload's own fields are always known
    assert {h.doc_id for h in search(client, "doc_id=p2").hits} == {"p2"}
    assert {h.doc_id for h in search(client, "chunk_index>=0", "lang!=en").hits} == {"p3"}


def test_an_unknown_filter_key_is_refused_listing_the_known_fields(env):
    _, client = env
    with pytest.raises(SearchError) as e:
        search(client, "language=en")
    message = str(e.value)
    print(message)
    assert "'language'" in message and repr(COLLECTION) in message
    for known in ("lang", "year", "venue.name", "doc_id", "chunk_index"):
        assert known in message
    with pytest.raises(SearchError, match=r"'metadata\.colour'"):
        search(client, "metadata.colour=red")


def test_a_range_on_a_string_field_is_refused(env):
    _, client = env
    with pytest.raises(SearchError) as e:
        search(client, "lang>3")
    message = str(e.value)
    print(message)
    assert "'lang'" in message and "string" in message and "number" in message
    with pytest.raises(SearchError, match="'doc_id'"):
        search(client, "doc_id>=1")


def test_a_wrong_collection_lists_the_collections_that_exist(env):
    _, client = env
    with pytest.raises(SearchError) as e:
        search(client, collection="paper")
    message = str(e.value)
    print(message)
    assert "'paper'" in message and "does not exist" in message and repr(COLLECTION) in message
    assert "__" not in message  # the physical collection behind the alias is not shown


def test_the_search_command_reports_a_refusal_on_one_line(env):
    server, _ = env
    env_vars = {k: v for k, v in os.environ.items() if not k.startswith("POOLQ_")}
    tail = ["--redis-url", server.url, "--mode", "dense"]
    for args, expected in [
        (["--collection", "paper"], "collection 'paper' does not exist"),
        (["--collection", COLLECTION, "--filter", "language=en"], "'language'"),
    ]:
        out = subprocess.run(
            [sys.executable, "-m", "poolq.worker", "search", "retrieval", *args, *tail],
            capture_output=True,
            text=True,
            timeout=60,
            env=env_vars,
        )
        lines = [x for x in out.stderr.splitlines() if x.strip()]
        assert out.returncode == 2 and len(lines) == 1, out.stderr
        assert lines[0].startswith("poolq search: error: ") and expected in lines[0]
        assert COLLECTION in lines[0]
