"""End to end with real processes: Redis server -> `poolq worker` -> embedded Qdrant (Edge)."""

import asyncio
import math
import pickle
import time

import numpy as np
import pytest

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.sinks.store.edge import EdgeStore
from poolq.wire import constants
from poolq.wire import payload as fields
from poolq.wire.records.codes import ErrorCode
from poolq.worker.dev.local_worker import WorkerProcess
from tests.models import minilm_path

pytestmark = pytest.mark.slow
# the payload's one owner; tests/sinks/test_payload.py holds the literal expected payload
PAYLOAD_FIELDS = set(fields.PAYLOAD_FIELDS)


def corpus(n=300):
    ps = passages(n + 40)
    docs = []
    for i in range(n):
        text = ps[i]
        if i % 10 == 0:  # some long documents: several chunks each
            text = "\n\n".join(ps[i : i + 40])
        docs.append(
            {
                "id": f"doc-{i:03d}",
                "text": text,
                "metadata": {"n": i, "parity": "even" if i % 2 == 0 else "odd"},
            }
        )
    return docs


def scroll_all(client, collection):
    points, offset = [], None
    while True:
        batch, offset = client.scroll(
            collection, limit=256, offset=offset, with_vectors=True, with_payload=True
        )  # a Store
        points.extend(batch)
        if offset is None:
            return points


async def run_jobs(url, collection, docs, job_size, force=False):
    async with PoolqClient(url) as client:
        ids = await client.enqueue(collection, docs, job_size=job_size, force=force)
        return ids, await client.wait(ids, timeout_s=600)


# three rounds of 300 documents through the default profile: ~200 s on a 2-core machine
@pytest.mark.timeout(900)
def test_300_documents_in_10_jobs_land_exactly_once(redis_server, tmp_path):
    from tokenizers import Tokenizer

    docs = corpus(300)
    qpath = tmp_path / "qdrant"
    with WorkerProcess(redis_server.url, qpath):
        ids, outcomes = asyncio.run(run_jobs(redis_server.url, "docs", docs, job_size=30))
        assert len(ids) == 10
        assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]
        points_first = sum(o.result.points for o in outcomes)
        assert sum(o.result.documents for o in outcomes) == 300
        assert all(o.result.errors == [] for o in outcomes)
        # the same documents again: unchanged, so skipped (nothing encoded or written)
        _, again = asyncio.run(run_jobs(redis_server.url, "docs", docs, job_size=30))
        assert sum(o.result.skipped for o in again) == 300
        assert sum(o.result.points for o in again) == 0
        # forced: written again under the same (idempotent) point ids, same count
        _, forced = asyncio.run(run_jobs(redis_server.url, "docs", docs, job_size=30, force=True))
        assert sum(o.result.points for o in forced) == points_first
        # doc-000 (long) re-ingested shorter: its stale chunks disappear
        _, short = asyncio.run(
            run_jobs(
                redis_server.url,
                "docs",
                [{"id": "doc-000", "text": "Now a single short chunk."}],
                1,
            )
        )
        assert short[0].result.points == 1

    client = EdgeStore(qpath)
    try:
        points = scroll_all(client, "docs")
        by_doc: dict[str, list] = {}
        for p in points:
            by_doc.setdefault(p.payload["doc_id"], []).append(p)
        long_chunks = len(by_doc["doc-010"])
        assert long_chunks > 1
        assert (
            len(by_doc["doc-000"]) == 1
            and by_doc["doc-000"][0].payload["text"] == "Now a single short chunk."
        )
        first_doc_chunks = points_first - (len(points) - 1)  # doc-000 had this many chunks before
        assert first_doc_chunks > 1
        assert len(points) == points_first - first_doc_chunks + 1
        assert client.count("docs") == len(points)
        assert set(by_doc) == {d["id"] for d in docs}
        tok = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
        tok.no_truncation()  # the file truncates and pads to 128; we count every real token
        tok.no_padding()
        text_of = {d["id"]: d["text"] for d in docs}
        text_of["doc-000"] = "Now a single short chunk."
        for doc_id, ps in by_doc.items():
            assert sorted(p.payload["chunk_index"] for p in ps) == list(
                range(len(ps))
            )  # no gaps, no duplicates
            for p in ps:
                pl = p.payload
                assert set(pl) == PAYLOAD_FIELDS
                assert pl["text"] == text_of[doc_id][pl["char_start"] : pl["char_end"]]
                assert pl["chunk_count"] == len(ps)
                if doc_id != "doc-000":  # re-ingested without metadata
                    assert pl["metadata"]["n"] == int(doc_id.split("-")[1])
                assert set(p.vector) == {"dense", "sparse", "colbert"}
                dense = np.array(p.vector["dense"])
                assert dense.shape == (384,) and math.isclose(
                    np.linalg.norm(dense), 1, abs_tol=1e-4
                )
                sparse = p.vector["sparse"]
                assert len(sparse.indices) == len(sparse.values) > 0
                multi = np.array(p.vector["colbert"])
                n_tokens = len(tok.encode(pl["text"]).ids)
                assert n_tokens <= 256, "chunks fit the smallest max length"
                assert multi.shape == (n_tokens, 384)
    finally:
        client.close()


def test_bad_documents_are_reported_and_the_rest_lands(redis_server, tmp_path):
    good = [{"id": f"ok-{i}", "text": f"good document number {i}"} for i in range(5)]
    bad = [
        {"text": "no id here"},
        {"id": "not-a-string", "text": 42},
        {"id": "empty", "text": "   "},
        {"id": "huge", "text": "x" * (5 * 1024 * 1024)},
        {"id": "bad-meta", "text": "fine text", "metadata": {"blob": b"\x00\x01"}},
        {"id": "nan-meta", "text": "fine text", "metadata": {"score": float("nan")}},
    ]
    docs = good[:2] + bad + good[2:]
    qpath = tmp_path / "qdrant"
    with WorkerProcess(redis_server.url, qpath):
        _, outcomes = asyncio.run(run_jobs(redis_server.url, "bad", docs, job_size=len(docs)))
    result = outcomes[0].result
    assert outcomes[0].status == "done"
    assert result.documents == 5 and result.points == 5
    errors = {e.id: e for e in result.errors}
    assert set(errors) == {"#2", "not-a-string", "empty", "huge", "bad-meta", "nan-meta"}
    assert {e.code for e in result.errors} == {ErrorCode.BAD_REQUEST}
    assert errors["#2"].field == "id"
    assert "text" in errors["not-a-string"].error and "int" in errors["not-a-string"].error
    assert "empty" in errors["empty"].error
    assert "exceeds the limit" in errors["huge"].error
    assert errors["bad-meta"].field == "metadata" and "bytes" in errors["bad-meta"].error
    assert errors["nan-meta"].field == "metadata"
    client = EdgeStore(qpath)
    try:
        assert {p.payload["doc_id"] for p in scroll_all(client, "bad")} == {d["id"] for d in good}
    finally:
        client.close()


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickled_job_is_refused_without_being_executed(redis_server, tmp_path):
    import redis

    marker = tmp_path / "pwned"
    payload = pickle.dumps(
        {
            "t": 1,
            "f": constants.INGEST_JOB,
            "a": ["c", [_Evil(str(marker))]],
            "k": {},
            "et": int(time.time() * 1000),
        }
    )
    r = redis.Redis.from_url(redis_server.url)
    r.set("arq:job:evil", payload)
    r.zadd(constants.INGEST_QUEUE, {"evil": time.time() * 1000})
    with WorkerProcess(redis_server.url, tmp_path / "qdrant"):

        async def outcome():
            async with PoolqClient(redis_server.url) as c:
                return (await c.wait(["evil"], timeout_s=60))[0]

        o = asyncio.run(outcome())
    assert o.status == "failed"
    assert "is not msgpack" in (o.error or "") and "never accepts pickle" in (o.error or "")
    assert not marker.exists(), "the pickle payload was executed"
    r.close()
