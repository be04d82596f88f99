"""The server path against the embedded one, as a user sees them: the same documents ingested
by a worker on the Qdrant endpoint (``grpc://``) and by a worker on an embedded folder answer
every search mode with the same hits (ids, order, scores, grouped chunks, filters); a
collection of another profile is refused by both with the same one-line error, and
``poolq reindex --full`` rebuilds it; and the stored points are the same."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from poolq.ingest.client import PoolqClient
from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store.client import ClientStore
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.records.codes import ErrorCode
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.integration.server.conftest import SEARCH_COLLECTION as KB
from tests.integration.server.helpers import (
    KELUD_QUERY,
    MODES,
    NAMED,
    assert_same_hits,
    connect,
    enqueue_wait,
    ingest,
    scroll_all,
    search,
    search_corpus,
)

pytestmark = pytest.mark.slow
PROFILE = (  # the built-in profile's vectors
    VectorSpec("dense", "dense", 384, "bundled:all-minilm-l6-v2"),
    VectorSpec("colbert", "multi", 384, "bundled:all-minilm-l6-v2"),
    VectorSpec("sparse", "sparse", None, "bundled:splade-tiny"),
)
# collections made by other profiles, behind their aliases as poolq makes them
OTHERS = {
    "colbert128": CollectionSchema(  # a profile whose colbert is a real 128-d ColBERT
        "colbert128__20250101000000_abcd",
        (PROFILE[0], VectorSpec("colbert", "multi", 128, "colbert"), PROFILE[2]),
    ),
    "halves": CollectionSchema(  # multivector_datatype = "float16"
        "halves__20250101000000_abcd", PROFILE, CollectionSettings(multivector_datatype="float16")
    ),
}


def make_others(store) -> None:
    for alias, schema in OTHERS.items():
        store.create_collection(schema.name, schema)
        store.switch_alias(alias, schema.name)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory, kb, endpoint):
    """A worker on an embedded folder (Redis of its own) with the search corpus, the
    collections of other profiles made on both stores: its Redis URL, the worker, the folder."""
    tmp = tmp_path_factory.mktemp("embedded")
    store = EdgeStore(tmp / "qdrant")
    make_others(store)
    store.close()
    server = ClientStore(connect(endpoint.port), description="endpoint")
    make_others(server)
    server.close()
    with LocalRedis(tmp / "redis") as r:
        worker = WorkerProcess(r.url, tmp / "qdrant").start()
        try:
            ingest(r.url, KB, search_corpus())
            yield r.url, worker, tmp / "qdrant"
        finally:
            worker.stop()


def both(redis_url, embedded, query, **kw):
    return search(redis_url, query, KB, **kw), search(embedded[0], query, KB, **kw)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_the_same_hits_as_embedded(redis_url, embedded, mode):
    for name, (_, query) in NAMED.items():
        got, expected = both(redis_url, embedded, query, mode=mode, limit=5)
        assert got.mode == mode and got.group_by == "doc_id"
        assert got.hits[0].doc_id == f"target-{name}", [(h.doc_id, h.score) for h in got]
        assert_same_hits(got.hits, expected.hits)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_chunks_the_same_as_embedded(redis_url, embedded, mode):
    got, expected = both(redis_url, embedded, KELUD_QUERY, mode=mode, limit=4)
    ids = [h.doc_id for h in got]
    assert {"manual-kelud", "note-kelud"} <= set(ids[:3]) and len(set(ids)) == 4, ids
    manual = next(h for h in got if h.doc_id == "manual-kelud")
    assert len(manual.chunks) == 2 and all(c.score <= manual.score for c in manual.chunks)
    assert_same_hits(got.hits, expected.hits)
    got, expected = both(redis_url, embedded, KELUD_QUERY, mode=mode, limit=6, group_by=None)
    assert sum(h.doc_id == "manual-kelud" for h in got) >= 3 and got.hits[0].chunks is None
    assert_same_hits(got.hits, expected.hits)


FILTERS = {  # filter expressions, and what they keep
    "lang=de": lambda m: m.get("lang") == "de",
    "kind=python,n>=10,n<20": lambda m: m.get("kind") == "python" and 10 <= m["n"] < 20,
    "kind!=python": lambda m: m.get("kind") != "python",
}


def test_filters_and_fusion_the_same_as_embedded(redis_url, embedded):
    query = NAMED["chess"][1]  # target-chess: lang "en"
    for mode in MODES:
        for flt, keeps in FILTERS.items():
            got, expected = both(
                redis_url, embedded, query, mode=mode, limit=8, filters=flt.split(",")
            )
            assert got.hits and all(keeps(h.metadata) for h in got), (flt, got.hits)
            assert_same_hits(got.hits, expected.hits)
    got, expected = both(redis_url, embedded, query, mode="hybrid", fusion="dbsf", limit=5)
    assert got.hits[0].doc_id == "target-chess"
    assert_same_hits(got.hits, expected.hits)
    dense = search(redis_url, query, KB, mode="dense", limit=10).hits
    cut = (dense[2].score + dense[3].score) / 2
    kept = both(redis_url, embedded, query, mode="dense", limit=10, score_threshold=cut)
    assert [h.id for h in kept[0]] == [h.id for h in dense[:3]]
    assert_same_hits(kept[0].hits, kept[1].hits)


@pytest.mark.timeout(240)
def test_another_profiles_collection_is_refused_alike_then_rebuilt(
    redis_url, embedded, workdir, endpoint
):
    doc = [{"id": "one", "text": "A document for a collection of another profile."}]
    for alias, schema in OTHERS.items():
        (got,) = enqueue_wait(redis_url, alias, doc)
        (expected,) = enqueue_wait(embedded[0], alias, doc)
        assert got.status == expected.status == "failed"
        assert got.error == expected.error, (got.error, expected.error)
        assert len(got.error.splitlines()) == 1
        assert got.code == expected.code == ErrorCode.BAD_REQUEST  # (a schema mismatch)
        assert (
            f": collection '{schema.name}' (alias '{alias}') does not match the schema: "
            in got.error
        ), got.error
        assert got.error.endswith(
            "rebuild it with `poolq reindex --full` (or set the profile's "
            "[vectors] / [collection] back to what the collection has)"
        )
    assert (
        "vector 'colbert': size 384 expected, collection has 128"
        in enqueue_wait(redis_url, "colbert128", doc)[0].error
    )

    source = workdir / "other.jsonl"
    source.write_text('{"id": "one", "text": "Rebuilt for the profile."}\n')

    async def rebuild():
        async with PoolqClient(redis_url) as client:
            job = await client.reindex(str(source), "halves", full=True)
            return (await client.wait([job], timeout_s=120))[0]

    outcome = asyncio.run(rebuild())
    assert outcome.status == "done", outcome.error
    assert outcome.result.switched_from == OTHERS["halves"].name
    ingest(redis_url, "halves", [{"id": "two", "text": "Now it takes documents."}])
    client = connect(endpoint.port)
    try:
        assert {p.payload["doc_id"] for p in scroll_all(client, "halves", False)} == {"one", "two"}
        names = {c.name for c in client.get_collections().collections}
        assert OTHERS["halves"].name not in names  # the old one dropped
    finally:
        client.close()


@pytest.mark.timeout(120)
def test_stored_points_are_the_embedded_ones(embedded, endpoint):
    """Last: stops the embedded worker to read its folder."""
    _, worker, folder = embedded
    worker.stop()
    client = connect(endpoint.port)
    store = EdgeStore(folder)
    try:
        server = {str(p.id): p for p in scroll_all(client, KB)}
        local = {str(p.id): p for p in scroll_all(store, KB)}
    finally:
        store.close()
        client.close()
    assert server.keys() == local.keys() and len(server) > 60
    for pid, p in server.items():
        q = local[pid]
        for point in (p, q):
            point.payload.pop("ingested_at")
        assert p.payload == q.payload
        for name in ("dense", "colbert"):  # encoded alike (to the threads' rounding)
            np.testing.assert_allclose(p.vector[name], q.vector[name], rtol=1e-5, atol=1e-5)
        assert _terms(p.vector["sparse"]) == pytest.approx(_terms(q.vector["sparse"]), abs=1e-5)


def _terms(sparse) -> dict[int, float]:
    """A sparse vector's weights, ~0 ones dropped (a term at the threshold may round away)."""
    return {i: v for i, v in zip(sparse.indices, sparse.values, strict=True) if v > 1e-4}
