"""A profile with a reranker and labels, end to end through a real worker (Redis, embedded
Qdrant): random checkpoints in the real layouts (``tests/rerank_checkpoints.py``) — a
MiniLM-L6 cross-encoder as ``[reranker]``, a classifier on the default profile's MiniLM
backbone (it shares the vectors' forward pass) and a multi-label one of its own as ``[labels]``.

The reranked hits' scores are sentence-transformers ``CrossEncoder.predict``'s on the same
(query, chunk) pairs; every payload's labels are transformers'
``AutoModelForSequenceClassification``'s; ``labels.<name>=...`` filters select them; the CLI's
footer and ``--json`` report the stage; ``--no-reranker`` and ``reranker=False`` skip it; the
dashboard's search page shows it beside the modes; ``--direct`` runs it too."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest
import torch

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.cli_process import poolq
from tests.rerank_checkpoints import build_classifier, build_minilm_cross_encoder

pytestmark = pytest.mark.slow
COLLECTION = "kb"
CANDIDATES = 12
TOPICS = ("billing", "shipping", "returns")
TAGS = ("urgent", "legal", "howto", "faq")
QUERIES = ["how do refunds work", "python string formatting", "shipping to another country"]


def documents() -> list[dict]:
    docs = [{"id": f"py-{i:03d}", "text": t} for i, t in enumerate(passages(60))]
    docs += [
        {"id": "refund", "text": "Refunds are paid to the original card within five days."},
        {"id": "ship", "text": "We ship to forty countries; customs fees are the buyer's."},
    ]
    return docs


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {
        "reranker": build_minilm_cross_encoder(root / "reranker", seed=5),
        "topic": build_classifier(root / "topic", TOPICS, on_minilm=True, seed=6),
        "tags": build_classifier(root / "tags", TAGS, multi_label=True, seed=7),
    }


@pytest.fixture(scope="module")
def env(tmp_path_factory, models):
    tmp = tmp_path_factory.mktemp("rerank")
    config = tmp / "poolq.toml"
    config.write_text(
        f'[reranker]\nmodel = "{models["reranker"]}"\ncandidates = {CANDIDATES}\n\n'
        f'[labels]\ntopic = {{ model = "{models["topic"]}" }}\n'
        f'tags = {{ model = "{models["tags"]}", threshold = 0.3 }}\n'
    )
    server = LocalRedis(tmp / "redis").start()
    worker = WorkerProcess(server.url, tmp / "qdrant", "--config", str(config)).start()

    async def ingest():
        async with PoolqClient(server.url) as client:
            ids = await client.enqueue(COLLECTION, documents(), job_size=20)
            outcomes = await client.wait(ids, timeout_s=600)
            assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]

    asyncio.run(ingest())
    yield {"url": server.url, "worker": worker, "config": config, "qdrant": tmp / "qdrant"}
    worker.stop()
    server.stop()


def search(url, query, **kw):
    async def go():
        async with PoolqClient(url) as client:
            return await client.search(query, COLLECTION, **kw)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def cross_encoder(models):
    from sentence_transformers import CrossEncoder

    return CrossEncoder(str(models["reranker"]), device="cpu")


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid", "rerank"])
def test_every_mode_is_reranked_with_the_cross_encoders_scores(env, cross_encoder, mode, models):
    for query in QUERIES:
        result = search(env["url"], query, mode=mode, limit=5, group_size=2)
        assert result.reranker == str(models["reranker"]) and result.rerank_s is not None
        assert result.mode == mode and result.group_by == "doc_id"
        hits = result.hits
        assert hits and len({h.doc_id for h in hits}) == len(hits), "one hit per document"
        pairs = [(query, h.text) for h in hits]
        want = cross_encoder.predict(pairs, batch_size=32)
        assert np.abs(np.array([h.score for h in hits]) - want).max() < 1e-4
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        for h in hits:  # a document's other chunks: re-scored too, below its best
            assert all(c.score <= h.score for c in h.chunks or [])


def test_the_candidates_are_the_modes_first_chunks(env, cross_encoder):
    query = QUERIES[0]
    plain = search(env["url"], query, mode="hybrid", limit=CANDIDATES, group_by=None,
                   reranker=False)  # fmt: skip
    assert plain.reranker is None and plain.rerank_s is None
    reranked = search(env["url"], query, mode="hybrid", limit=CANDIDATES, group_by=None)
    assert {h.id for h in reranked.hits} == {h.id for h in plain.hits}
    want = cross_encoder.predict([(query, h.text) for h in plain.hits], batch_size=32)
    assert [h.id for h in reranked.hits] == [
        plain.hits[i].id for i in np.argsort(-want, kind="stable")
    ]
    assert {h.score for h in plain.hits} != {h.score for h in reranked.hits}


def test_a_score_threshold_applies_to_the_rerankers_scores(env):
    hits = search(env["url"], QUERIES[1], group_by=None, limit=CANDIDATES).hits
    cut = sorted(h.score for h in hits)[len(hits) // 2]
    kept = search(env["url"], QUERIES[1], group_by=None, limit=CANDIDATES, score_threshold=cut)
    assert kept.hits and all(h.score >= cut for h in kept.hits)
    assert len(kept.hits) < len(hits)


def test_the_cli_reports_the_stage_in_its_footer_and_json(env, models):
    cfg = ["--collection", COLLECTION, "--redis-url", env["url"]]
    out = poolq("search", QUERIES[2], *cfg, "--json")
    assert out.returncode == 0, out.stderr
    assert re.search(rf"rerank \d+ ms \({re.escape(str(models['reranker']))}\)", out.stderr)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines and all(isinstance(x["rerank_s"], float) for x in lines)
    assert {x["reranker"] for x in lines} == {str(models["reranker"])}
    out = poolq("search", QUERIES[2], *cfg, "--json", "--no-reranker")
    assert out.returncode == 0 and not re.search(r"rerank \d+ ms", out.stderr), out.stderr
    assert all("rerank_s" not in json.loads(line) for line in out.stdout.splitlines())


def test_the_dashboards_search_page_shows_the_reranker_beside_the_modes(env, models):
    from starlette.testclient import TestClient

    from poolq.ingest.dashboard.app import create_app

    with TestClient(create_app(env["url"]), base_url="http://127.0.0.1") as tc:
        page = tc.get(f"/search?q=refunds&collection={COLLECTION}").text
        assert page.count('class="mode"') == 5
        assert f"re-scored by {models['reranker']}" in page
        api = tc.get(f"/api/search?q=refunds&collection={COLLECTION}").json()
        assert api["reranker"] == str(models["reranker"])
        api = tc.get(f"/api/search?q=refunds&collection={COLLECTION}&reranker=false").json()
        assert api["reranker"] is None


def test_a_classifier_on_the_vectors_backbone_has_no_engine_of_its_own(env, models):
    engines = {m for hb in env["worker"].heartbeats() for m in hb.get("engines") or {}}
    assert str(models["tags"]) in engines
    assert str(models["topic"]) not in engines  # its head reads MiniLM's forward


def reference_labels(models, texts) -> tuple[list[dict], list[list[dict]]]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out = {}
    for name in ("topic", "tags"):
        tok = AutoTokenizer.from_pretrained(str(models[name]))
        model = AutoModelForSequenceClassification.from_pretrained(str(models[name])).eval()
        with torch.inference_mode():
            logits = model(**tok(texts, padding=True, truncation=True, max_length=256,
                                 return_tensors="pt")).logits  # fmt: skip
        out[name] = torch.sigmoid(logits) if name == "tags" else torch.softmax(logits, -1)
    topics = [{"label": TOPICS[int(r.argmax())], "score": float(r.max())} for r in out["topic"]]
    tags = [
        sorted(
            ({"label": TAGS[i], "score": float(r[i])} for i in range(len(TAGS)) if r[i] >= 0.3),
            key=lambda x: -x["score"],
        )
        for r in out["tags"]
    ]
    return topics, tags


def all_chunks(url, **kw):
    return search(url, "anything", mode="dense", limit=1000, group_by=None, reranker=False, **kw)


def test_label_filters_select_the_chunks_whose_labels_match(env, models):
    chunks = all_chunks(env["url"]).hits
    assert len(chunks) > len(documents())  # some passages are cut in several chunks
    topics, tags = reference_labels(models, [h.text for h in chunks])
    for label in TOPICS:
        want = {h.id for h, t in zip(chunks, topics, strict=True) if t["label"] == label}
        got = all_chunks(env["url"], filters=[f"labels.topic={label}"])
        assert {h.id for h in got.hits} == want, label
    for tag in TAGS:
        want = {h.id for h, t in zip(chunks, tags, strict=True) if tag in {x["label"] for x in t}}
        got = all_chunks(env["url"], filters=[f"labels.tags={tag}"])
        assert {h.id for h in got.hits} == want, tag
    got = all_chunks(env["url"], filters=["labels.topic.score>=0.4"])
    want = {h.id for h, t in zip(chunks, topics, strict=True) if t["score"] >= 0.4}
    assert want and {h.id for h in got.hits} == want


def test_z_payload_labels_match_transformers_and_direct_search_reranks(env, models):
    """Last (it stops the worker): the stored payloads, read from the folder, and ``--direct``."""
    from poolq.sinks.store.edge import EdgeStore

    env["worker"].stop()
    store = EdgeStore(env["qdrant"])
    try:
        records, _ = store.scroll(store.resolve(COLLECTION), limit=1000)
    finally:
        store.close()
    payloads = [r.payload for r in records]
    assert {p["doc_id"] for p in payloads} == {d["id"] for d in documents()}
    topics, tags = reference_labels(models, [p["text"] for p in payloads])
    for payload, topic, tag in zip(payloads, topics, tags, strict=True):
        labels = payload["labels"]
        assert set(labels) == {"topic", "tags"}
        assert labels["topic"]["label"] == topic["label"]
        assert abs(labels["topic"]["score"] - topic["score"]) < 1e-4
        assert [x["label"] for x in labels["tags"]] == [x["label"] for x in tag]
        assert all(
            abs(a["score"] - b["score"]) < 1e-4 for a, b in zip(labels["tags"], tag, strict=True)
        )
    out = poolq("search", "refunds", "--collection", COLLECTION, "--direct", "--config",
                str(env["config"]), "--qdrant-path", str(env["qdrant"]))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert f"({models['reranker']})" in out.stderr and "rerank " in out.stderr
