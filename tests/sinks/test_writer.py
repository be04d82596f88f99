"""QdrantWriter against Qdrant Edge, with fault injection around the real Edge adapter."""

import asyncio
import threading
import time
import zlib

import httpx
import numpy as np
import pytest
from pydantic import BaseModel, ValidationError
from qdrant_client import models
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from poolq.sinks.points import PointRecord, SparseValues, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store.edge import EdgeStore
from poolq.sinks.store.errors import EdgeError, SinkUnavailableError, is_transient
from poolq.sinks.store.interface import Store
from poolq.sinks.writer import QdrantWriter

SCHEMA = CollectionSchema(
    "docs",
    (
        VectorSpec("dense", "dense", 384, "minilm"),
        VectorSpec("splade", "sparse", None, "splade-tiny"),
        VectorSpec("colbert", "multi", 128, "colbert-tiny"),
    ),
)
FAST = {"backoff_s": 0.001, "max_backoff_s": 0.005}


def chunk(doc_id, i, seed=0):
    rng = np.random.default_rng(zlib.crc32(f"{doc_id}/{i}/{seed}".encode()))
    n_tokens = 3 + i % 6
    indices = sorted(rng.choice(30000, size=5 + i % 4, replace=False).tolist())
    return PointRecord(
        id=point_id(doc_id, i),
        vectors={
            "dense": rng.standard_normal(384).tolist(),
            "splade": SparseValues(indices, rng.random(len(indices)).tolist()),
            "colbert": rng.standard_normal((n_tokens, 128)).tolist(),
        },
        payload={"doc_id": doc_id, "chunk_index": i, "seed": seed},
    )


def doc(doc_id, n_chunks, seed=0):
    return [chunk(doc_id, i, seed) for i in range(n_chunks)]


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


class Proxy:
    """Wraps the real Edge store: records the threads that call it (writes and reads apart),
    holds upserts while ``gate`` is clear, and makes the first ``fail`` upserts raise
    ``error()`` (all if None)."""

    def __init__(self, path, fail=0, error=lambda: ResponseHandlingException(Exception("boom"))):
        self.path, self.fail, self.error = path, fail, error
        self.upserts = 0
        self.threads = set()  # of creation, writes and close
        self.read_threads = set()
        self.gate = threading.Event()  # upserts wait while it is clear
        self.gate.set()

    def connect(self):
        self.threads.add(threading.get_ident())
        self.inner = EdgeStore(self.path)
        return self

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*a, **kw):
            reads = ("count", "scroll", "query")  # what the writer reads through read()
            (self.read_threads if name in reads else self.threads).add(threading.get_ident())
            return attr(*a, **kw)

        return call

    def upsert(self, *a, **kw):
        self.threads.add(threading.get_ident())
        self.upserts += 1
        assert self.gate.wait(timeout=30)
        if self.fail is None or self.upserts <= self.fail:
            raise self.error()
        return self.inner.upsert(*a, **kw)

    def upsert_records(self, collection, records):  # the writer's call, through upsert above
        return Store.upsert_records(self, collection, records)


@pytest.fixture
def qpath(tmp_path):
    return str(tmp_path / "qdrant")


@pytest.fixture
async def writer(qpath):
    async with QdrantWriter(path=qpath, batch_points=64, **FAST) as w:
        await w.ensure_collection(SCHEMA)
        yield w


async def test_write_roundtrip_and_idempotent(writer):
    points = [p for d in range(30) for p in doc(f"doc-{d}", 10)]
    assert await writer.write("docs", points) == 300
    assert await writer.count("docs") == 300
    assert await writer.count("docs", doc_id="doc-7") == 10
    assert (writer.points_written, writer.batches_written, writer.retries) == (300, 5, 0)

    want = points[123]
    [got] = await writer.retrieve("docs", [want.id])
    assert got.payload == want.payload
    np.testing.assert_allclose(got.vector["dense"], unit(want.vectors["dense"]), atol=1e-6)
    sparse = got.vector["splade"]
    assert sparse.indices == want.vectors["splade"].indices.tolist()
    np.testing.assert_allclose(sparse.values, want.vectors["splade"].values, rtol=1e-6)
    multi = np.asarray(got.vector["colbert"])
    assert multi.shape == (len(want.vectors["colbert"]), 128)
    np.testing.assert_allclose(multi, unit(want.vectors["colbert"]), atol=1e-6)

    assert await writer.write("docs", points) == 300  # same ids: overwritten, not added
    assert await writer.count("docs") == 300
    assert writer.points_written == 600


async def test_replace_docs_removes_stale_chunks(writer):
    await writer.write("docs", doc("a", 5) + doc("b", 4))
    await writer.write("docs", doc("a", 3, seed=1), replace_docs={"a": 3})
    assert await writer.count("docs", doc_id="a") == 3
    assert await writer.count("docs", doc_id="b") == 4
    stale = await writer.retrieve("docs", [point_id("a", 3), point_id("a", 4)])
    assert stale == []
    kept = await writer.retrieve("docs", [point_id("a", i) for i in range(3)], with_vectors=False)
    assert sorted(r.payload["chunk_index"] for r in kept) == [0, 1, 2]
    assert {r.payload["seed"] for r in kept} == {1}
    assert all(r.vector is None for r in kept)

    await writer.write("docs", [], replace_docs={"b": 0})  # a document with no chunks left
    assert await writer.count("docs") == 3
    with pytest.raises(ValueError, match=r"replace_docs\['a'\]: expected an integer >= 0"):
        await writer.write("docs", [], replace_docs={"a": -1})


class ProbeProxy(Proxy):
    """Counts the writer's calls into the store thread; the first ``probe_fails`` lookups by id
    raise."""

    def __init__(self, path, probe_fails=0):
        super().__init__(path)
        self.probe_fails, self.retrieves = probe_fails, 0

    def retrieve(self, *a, **kw):
        self.retrieves += 1
        if self.probe_fails:
            self.probe_fails -= 1
            raise ResponseHandlingException(Exception("probe"))
        return self.inner.retrieve(*a, **kw)


@pytest.mark.parametrize("probe_fails", [0, 1])
async def test_the_last_upsert_probes_for_stale_chunks_in_its_own_call(qpath, probe_fails):
    proxy = ProbeProxy(qpath)
    async with QdrantWriter(store_factory=proxy.connect, batch_points=10, **FAST) as w:
        await w.ensure_collection(SCHEMA)
        await w.write("docs", doc("a", 30) + doc("b", 2))
        proxy.probe_fails, proxy.retrieves = probe_fails, 0
        calls = []
        run = w._run
        w._run = lambda fn, reader=False: calls.append(fn) or run(fn, reader)  # type: ignore
        # a shrinks from 30 chunks to 22: three upserts, the probe in the last one's call
        assert await w.write("docs", doc("a", 22, seed=1), replace_docs={"a": 22}) == 22
        assert proxy.upserts == 4 + 3 and proxy.retrieves == 1 + probe_fails
        # the upserts and the delete (and the probe again where it failed): no call of its own
        assert len(calls) == 3 + 1 + probe_fails
        assert await w.count("docs", doc_id="a") == 22
        assert await w.count("docs", doc_id="b") == 2
        assert w.retries == 0  # a failed probe is asked again, not the upsert


async def test_maxsim_query_finds_the_query_point(writer):
    points = [p for d in range(8) for p in doc(f"d{d}", 5)]
    await writer.write("docs", points)
    target = points[17]
    request = {
        "collection_name": "docs",
        "query": target.vectors["colbert"],
        "using": "colbert",
        "limit": 3,
    }
    res = await writer.read(lambda s: s.query(request))
    assert res[0].id == target.id
    assert res[0].score == pytest.approx(len(target.vectors["colbert"]), rel=1e-5)
    assert res[0].score > res[1].score


async def test_transient_failures_are_retried(qpath):
    proxy = Proxy(qpath, fail=3)
    async with QdrantWriter(store_factory=proxy.connect, batch_points=10, **FAST) as w:
        await w.ensure_collection(SCHEMA)
        assert await w.write("docs", doc("a", 25)) == 25
        assert w.retries == 3 and w.batches_written == 3
        assert proxy.upserts == 6  # batch 1 took 4 attempts
        assert await w.count("docs") == 25


@pytest.mark.parametrize(
    "error",
    [
        lambda: UnexpectedResponse(503, "Service Unavailable", b"", httpx.Headers()),
        lambda: UnexpectedResponse(429, "Too Many Requests", b"", httpx.Headers()),
        lambda: httpx.ConnectError("connection refused"),
        lambda: TimeoutError("timed out"),
    ],
)
async def test_other_transient_errors(qpath, error):
    proxy = Proxy(qpath, fail=1, error=error)
    async with QdrantWriter(store_factory=proxy.connect, **FAST) as w:
        await w.ensure_collection(SCHEMA)
        assert await w.write("docs", doc("a", 2)) == 2
        assert w.retries == 1


async def test_gives_up_after_max_retries(qpath):
    proxy = Proxy(qpath, fail=None)
    async with QdrantWriter(store_factory=proxy.connect, max_retries=4, **FAST) as w:
        await w.ensure_collection(SCHEMA)
        with pytest.raises(SinkUnavailableError) as err:
            await w.write("docs", doc("a", 3))
        assert err.value.attempts == 5 and proxy.upserts == 5 and w.retries == 4
        msg = str(err.value)
        assert "failed 5 times (1 attempt + 4 retries)" in msg
        assert "ResponseHandlingException(Exception: boom)" in msg
        assert w.points_written == 0
        assert await w.count("docs") == 0  # the writer still works afterwards


async def test_non_transient_errors_are_raised_at_once(qpath):
    bad = UnexpectedResponse(400, "Bad Request", b'{"status":{"error":"bad"}}', httpx.Headers())
    proxy = Proxy(qpath, fail=None, error=lambda: bad)
    async with QdrantWriter(store_factory=proxy.connect, **FAST) as w:
        await w.ensure_collection(SCHEMA)
        with pytest.raises(UnexpectedResponse) as err:
            await w.write("docs", doc("a", 3))
        assert err.value is bad and proxy.upserts == 1 and w.retries == 0

    async with QdrantWriter(path=qpath, **FAST) as w:  # real Edge errors: never retried
        wrong = PointRecord(point_id("x", 0), {"dense": [1.0, 2.0]}, {"doc_id": "x"})
        with pytest.raises(EdgeError, match=r"upsert into 'docs': Vector dimension error"):
            await w.write("docs", [wrong])
        with pytest.raises(ValueError, match="collection 'nope' not found in the Qdrant Edge"):
            await w.count("nope")
        assert w.retries == 0


class _M(BaseModel):
    x: int


def _validation_error():
    try:
        _M(x="no")
    except ValidationError as e:
        return e


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (ResponseHandlingException(Exception("boom")), True),
        (ResponseHandlingException(httpx.ReadTimeout("slow")), True),
        (ResponseHandlingException(_validation_error()), False),  # a response it can't parse
        (UnexpectedResponse(500, "", b"", httpx.Headers()), True),
        (UnexpectedResponse(502, "", b"", httpx.Headers()), True),
        (UnexpectedResponse(429, "", b"", httpx.Headers()), True),
        (UnexpectedResponse(None, "", b"", httpx.Headers()), True),
        (UnexpectedResponse(400, "", b"", httpx.Headers()), False),
        (UnexpectedResponse(404, "", b"", httpx.Headers()), False),
        (UnexpectedResponse(409, "", b"", httpx.Headers()), False),
        (ResourceExhaustedResponse("slow down", 1), True),
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (httpx.ConnectTimeout("t"), True),
        (ValueError("Collection docs not found"), False),
        (EdgeError("Qdrant Edge: upsert into 'docs': Vector dimension error"), False),
        (Exception("Service runtime error"), False),
    ],
)
def test_is_transient(error, transient):
    assert is_transient(error) is transient


async def test_concurrent_writers_share_one_owner(qpath):
    proxy = Proxy(qpath)
    async with QdrantWriter(store_factory=proxy.connect, batch_points=16, queue_size=2) as w:
        await w.ensure_collection(SCHEMA)
        results = await asyncio.gather(*(w.write("docs", doc(f"d{t}", 30)) for t in range(10)))
        assert results == [30] * 10
        assert await w.count("docs") == 300
        assert w.batches_written == 10 * 2
    # creation, every write and close ran in one thread, reads in another, never the loop's
    assert len(proxy.threads) == 1 and threading.get_ident() not in proxy.threads
    assert len(proxy.read_threads) == 1 and proxy.read_threads != proxy.threads
    assert threading.get_ident() not in proxy.read_threads


async def until(cond):
    for _ in range(3000):
        if cond():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")


async def test_event_loop_is_not_blocked(qpath):
    proxy = Proxy(qpath)
    async with QdrantWriter(store_factory=proxy.connect) as w:
        await w.ensure_collection(SCHEMA)
        proxy.gate.clear()  # a server that does not answer
        write = asyncio.create_task(w.write("docs", doc("a", 3)))
        await until(lambda: proxy.upserts == 1)
        start = time.perf_counter()
        await asyncio.sleep(0.05)  # the loop keeps running while the upsert hangs
        assert time.perf_counter() - start < 1.0 and not write.done()
        proxy.gate.set()
        assert await write == 3


async def test_stop_finishes_queued_work_and_releases_the_folder(qpath):
    w = QdrantWriter(path=qpath, batch_points=7, queue_size=1)
    await w.start()
    await w.ensure_collection(SCHEMA)
    tasks = [asyncio.create_task(w.write("docs", doc(f"d{i}", 10))) for i in range(5)]
    await asyncio.sleep(0)  # let them queue up (the queue holds one, the rest wait)
    await w.stop()
    assert [t.result() for t in tasks] == [10] * 5
    with pytest.raises(RuntimeError, match="not running"):
        await w.write("docs", doc("late", 1))
    await w.stop()  # idempotent
    await w.start()  # and restartable
    await asyncio.gather(w.stop(), w.stop())  # concurrent stops share one shutdown

    store = EdgeStore(qpath)  # the lock was released, the data is on disk
    assert store.count("docs") == 50
    store.close()


async def test_cancelled_callers_do_not_break_the_writer(qpath):
    proxy = Proxy(qpath)
    w = QdrantWriter(store_factory=proxy.connect, queue_size=1)
    await w.start()
    await w.ensure_collection(SCHEMA)
    proxy.gate.clear()
    running = asyncio.create_task(w.write("docs", doc("a", 2)))
    await until(lambda: proxy.upserts == 1)
    queued = asyncio.create_task(w.write("docs", doc("b", 2)))
    waiting = asyncio.create_task(w.write("docs", doc("c", 2)))  # the queue is full
    await asyncio.sleep(0.01)
    waiting.cancel()  # blocked on the full queue
    queued.cancel()  # queued: skipped
    running.cancel()  # already running: finishes in the client thread
    proxy.gate.set()
    assert await w.write("docs", doc("d", 3)) == 3
    assert await w.count("docs", doc_id="d") == 3
    assert await w.count("docs", doc_id="a") == 2
    assert await w.count("docs", doc_id="b") == 0
    assert await w.count("docs", doc_id="c") == 0
    await asyncio.wait_for(w.stop(), timeout=5)


def test_constructor_checks():
    with pytest.raises(ValueError, match=r"exactly one of url= .* got both"):
        QdrantWriter(url="http://localhost:6333", path="/tmp/x")
    with pytest.raises(ValueError, match="got neither"):
        QdrantWriter()
    with pytest.raises(ValueError, match="not both"):
        QdrantWriter(url="http://q", store_factory=lambda: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="api_key is for a Qdrant server"):
        QdrantWriter(path="/tmp/x", api_key="k")
    with pytest.raises(ValueError, match="batch_points: expected an integer >= 1, got 0"):
        QdrantWriter(path="/tmp/x", batch_points=0)
    with pytest.raises(ValueError, match="base_s <= cap_s"):
        QdrantWriter(path="/tmp/x", backoff_s=2, max_backoff_s=1)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
async def test_url_and_api_key_reach_the_client_but_never_the_repr(transport, monkeypatch, caplog):
    seen = {}

    class FakeClient:
        def __init__(self, **kw):
            seen.update(kw)

        def close(self):
            seen["closed"] = True

    monkeypatch.setattr("qdrant_client.QdrantClient", FakeClient)
    monkeypatch.setattr("poolq.sinks.store.server.QdrantClient", FakeClient)
    w = QdrantWriter(
        url="https://user:pw@qdrant.example.com:6333", api_key="s3cret-key", transport=transport
    )
    assert "s3cret" not in repr(w) and "pw" not in repr(w)
    if transport == "rest":
        assert repr(w) == "QdrantWriter(url='https://qdrant.example.com:6333')"
    else:  # gRPC on Qdrant's gRPC port of that host, with TLS as the URL asks
        assert repr(w) == "QdrantWriter(url='grpcs://qdrant.example.com:6334')"
    async with w:
        pass
    if transport == "rest":
        assert seen == {
            "url": "https://user:pw@qdrant.example.com:6333",
            "api_key": "s3cret-key",
            "closed": True,
        }
    else:
        assert seen["api_key"] == "s3cret-key" and seen["closed"]
        assert (seen["host"], seen["grpc_port"], seen["https"], seen["prefer_grpc"]) == (
            "qdrant.example.com",
            6334,
            True,
            True,
        )
    assert "s3cret" not in caplog.text


def test_points():
    assert point_id("doc", 3) == point_id("doc", 3)
    assert len({point_id("doc", 1), point_id("doc", 2), point_id("doc1", 1)}) == 3
    assert point_id("a,1", 2) != point_id("a", 12) != point_id("a,", 12)
    with pytest.raises(ValueError, match="chunk_index"):
        point_id("doc", -1)
    with pytest.raises(ValueError, match="expected a UUID string, got 'nope'"):
        PointRecord("nope", {}, {})
    with pytest.raises(ValueError, match="as many values as indices"):
        SparseValues([1, 2], [0.5])
    with pytest.raises(ValueError, match="unique"):
        SparseValues([1, 1], [0.5, 0.5])
    rec = PointRecord(
        point_id("d", 0),
        {"s": SparseValues([4, 9], [0.1, 0.2]), "v": np.ones(3, dtype=np.float32)},
        {"doc_id": "d"},
    )
    ps = to_point_struct(rec)
    # sparse values are float32 from the pooler to the store (Qdrant keeps float32)
    f32 = np.float32([0.1, 0.2]).tolist()
    assert ps.vector["s"] == models.SparseVector(indices=[4, 9], values=f32)
    assert type(ps.vector["s"].indices[0]) is int  # plain ints for qdrant-client
    assert ps.vector["v"] == [1.0, 1.0, 1.0]
