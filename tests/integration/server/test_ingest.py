"""Ingest over the server path: documents enqueued with the client land exactly once in the
Qdrant endpoint (read back through qdrant-client over gRPC: ids, payloads, dense, sparse and
multi-vectors), unchanged ones are skipped, forced ones rewritten under the same ids, a shrunk
one loses its stale chunks, and bad documents are reported while the rest lands."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tokenizers import Tokenizer

from poolq.ingest.sample_corpus import passages
from poolq.sinks.points import point_id
from tests.audit import audit_collection
from tests.integration.server.conftest import SEARCH_COLLECTION
from tests.integration.server.helpers import connect, ingest, scroll_all, search_corpus
from tests.integration.test_ingest import PAYLOAD_FIELDS
from tests.models import minilm_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def qdrant(endpoint):
    client = connect(endpoint.port)
    yield client
    client.close()


@pytest.mark.timeout(300)  # run alone, its set-up starts the endpoint and the worker, ingests
def test_documents_land_once_with_payloads_and_every_vector(kb, qdrant):
    docs = {d["id"]: d for d in search_corpus()}
    points = scroll_all(qdrant, SEARCH_COLLECTION)
    assert sum(o.result.documents for o in kb) == len(docs)
    assert (
        sum(o.result.points for o in kb)
        == len(points)
        == qdrant.count(SEARCH_COLLECTION, exact=True).count
    )
    audit = audit_collection(qdrant, SEARCH_COLLECTION)  # type: ignore[arg-type]
    assert audit.documents == set(docs) and audit.problems() == []
    assert audit.points == audit.expected_points == len(points)
    assert len(audit.chunks["manual-kelud"]) > 5  # a long document: many chunks

    tok = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    for p in points:
        pl = p.payload
        doc = docs[pl["doc_id"]]
        assert set(pl) == PAYLOAD_FIELDS
        assert str(p.id) == point_id(doc["id"], pl["chunk_index"])
        assert pl["text"] == doc["text"].strip()[pl["char_start"] : pl["char_end"]]
        assert pl["metadata"] == doc["metadata"]
        assert set(p.vector) == {"dense", "sparse", "colbert"}
        dense = np.asarray(p.vector["dense"])
        assert dense.shape == (384,) and math.isclose(np.linalg.norm(dense), 1, abs_tol=1e-4)
        sparse = p.vector["sparse"]
        assert len(sparse.indices) == len(set(sparse.indices)) == len(sparse.values) > 0
        assert min(sparse.values) > 0
        multi = np.asarray(p.vector["colbert"])
        assert multi.shape == (len(tok.encode(pl["text"]).ids), 384)


def test_the_collection_is_created_behind_its_alias(kb, qdrant):
    aliases = {a.alias_name: a.collection_name for a in qdrant.get_aliases().aliases}
    target = aliases[SEARCH_COLLECTION]
    assert target.startswith(f"{SEARCH_COLLECTION}__")
    assert target in {c.name for c in qdrant.get_collections().collections}
    info = qdrant.get_collection(target)
    assert info.config.params.vectors["dense"].size == 384
    assert set(info.config.params.sparse_vectors) == {"sparse"}
    colbert = info.config.params.vectors["colbert"]
    assert colbert.multivector_config is not None and colbert.on_disk is True  # the defaults


@pytest.mark.timeout(180)
def test_unchanged_skipped_forced_rewritten_shrunk_loses_chunks(worker, redis_url, qdrant):
    collection = "again"
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(passages(12)[:6])]
    docs.append({"id": "long", "text": "\n\n".join(passages(12)[6:])})  # several chunks
    first = ingest(redis_url, collection, docs, job_size=5)
    points = sum(o.result.points for o in first)
    assert qdrant.count(collection, exact=True).count == points
    again = ingest(redis_url, collection, docs, job_size=5)
    assert sum(o.result.skipped for o in again) == len(docs)
    assert sum(o.result.points for o in again) == 0
    before = {str(p.id): p.payload["ingested_at"] for p in scroll_all(qdrant, collection, False)}
    forced = ingest(redis_url, collection, docs, job_size=5, force=True)
    assert sum(o.result.points for o in forced) == points
    after = {str(p.id): p.payload["ingested_at"] for p in scroll_all(qdrant, collection, False)}
    assert after.keys() == before.keys()  # the same ids, written again
    assert all(after[i] >= before[i] for i in after) and after != before

    long = [p for p in after if p in {point_id("long", i) for i in range(100)}]
    assert len(long) > 1
    (short,) = ingest(redis_url, collection, [{"id": "long", "text": "Short now."}], 1)
    assert short.result.points == 1
    kept = scroll_all(qdrant, collection, False)
    assert len(kept) == points - len(long) + 1
    (mine,) = [p for p in kept if p.payload["doc_id"] == "long"]
    assert (mine.payload["text"], mine.payload["chunk_count"]) == ("Short now.", 1)
    assert audit_collection(qdrant, collection).problems() == []  # type: ignore[arg-type]


@pytest.mark.timeout(120)
def test_bad_documents_are_reported_and_the_rest_lands(worker, redis_url, qdrant):
    good = [{"id": f"ok-{i}", "text": f"good document number {i}"} for i in range(3)]
    bad = [
        {"text": "no id here"},
        {"id": "empty", "text": "   "},
        {"id": "nan-meta", "text": "fine text", "metadata": {"score": float("nan")}},
    ]
    (outcome,) = ingest(redis_url, "bad", good[:1] + bad + good[1:], job_size=10)
    assert (outcome.result.documents, outcome.result.points) == (3, 3)
    assert {e.id for e in outcome.result.errors} == {"#1", "empty", "nan-meta"}
    assert {p.payload["doc_id"] for p in scroll_all(qdrant, "bad", False)} == {
        d["id"] for d in good
    }
