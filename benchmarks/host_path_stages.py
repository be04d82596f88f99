"""The per-stage costs of ``bench_host_path.py``, each stage measured alone (in this process, on
the benchmark's documents and shapes): what one chunk costs the host around
the model, stage by stage, and the store's own floor (conversion + write at the same shape)."""

from __future__ import annotations

import gc
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from poolq.sinks.points import PointRecord, to_point_struct
from poolq.sinks.schema import CollectionSchema
from poolq.wire.documents import Document, validate_documents
from poolq.wire.serialization import job_deserializer, serialize
from poolq.worker.chunks.points import document_points
from poolq.worker.runtime.vectorizer import Vectorizer, pool_documents

HOST_STAGES = (
    "decode", "chunk", "tokenize", "forward", "pool", "pool_factor", "point build", "progress"
)  # fmt: skip
STORE_STAGES = ("store conversion", "store write")


@dataclass
class Stages:
    seconds: dict[str, float] = field(default_factory=dict)
    chunks: int = 0
    tokens_per_chunk: float = 0.0

    def best(self, name: str, s: float) -> None:
        self.seconds[name] = min(s, self.seconds.get(name, float("inf")))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


class _Observer:
    def __init__(self) -> None:
        self.forward_s = self.pool_s = 0.0

    def tokenized(self, seconds: float) -> None:
        pass

    def batch(self, tokens: int, queue_waits: Any, forward_s: float, pool_s: float) -> None:
        self.forward_s += forward_s
        self.pool_s += pool_s


def job_payloads(raw_docs: list[dict], job_size: int) -> list[bytes]:
    """The jobs as arq stores them in Redis (msgpack)."""
    return [
        serialize(
            {"f": "ingest", "a": ["bench", raw_docs[i : i + job_size]], "k": {}, "t": 1, "et": 0}
        )
        for i in range(0, len(raw_docs), job_size)
    ]


async def measure(
    vec: Vectorizer,
    raw_docs: list[dict],
    schema: CollectionSchema,
    *,
    job_size: int,
    batch_points: int,
    redis_url: str,
) -> tuple[Stages, list[PointRecord]]:
    import redis.asyncio as aioredis

    from poolq.worker.runtime.job_progress import JobProgress

    st = Stages()
    payloads = job_payloads(raw_docs, job_size)
    decode = job_deserializer()
    docs: list[Document] = []
    chunked: list[Any] = []
    points: list[PointRecord] = []
    engine = next(iter(vec.engines.values()))
    forms = engine.description.input_forms
    form = forms.form("document") if forms is not None else None
    tmp = Path(tempfile.mkdtemp(prefix="poolq-stages-"))
    redis = aioredis.Redis.from_url(redis_url)
    try:

        def decode_all() -> list[Document]:
            out: list[Document] = []
            for p in payloads:
                out += validate_documents(decode(p)["a"][1])[0]
            return out

        s, docs = timed(decode_all)
        st.best("decode", s)
        s, chunked = timed(
            lambda: (
                vec.chunk_many([d.text for d in docs])
                if hasattr(vec, "chunk_many")
                else [vec.chunk(d.text) for d in docs]
            )
        )
        st.best("chunk", s)
        texts = [c.text for cs in chunked for c in cs]
        # what the engine tokenizes: a chunk that is its whole document reuses chunking's tokens
        pre = [c.encodings[0] if c.encodings else None for cs in chunked for c in cs]
        st.chunks = len(texts)
        parts = [
            (texts[i : i + batch_points], pre[i : i + batch_points])
            for i in range(0, len(texts), batch_points)
        ]
        s, _ = timed(
            lambda: [engine._tokenize(p, form, q if form is None else None) for p, q in parts]
        )
        st.best("tokenize", s)
        obs = _Observer()
        engine.set_observer(obs)
        # pool_factor's token pooling, timed on its own: encoded unpooled, then pooled here
        factors = {v.name: v.pool_factor for v in vec.profile.vectors if (v.pool_factor or 1) > 1}
        profile = vec.profile
        vec.profile = replace(
            profile, vectors=tuple(replace(v, pool_factor=None) for v in profile.vectors)
        )
        try:
            encoded = await vec.encode(texts, [str(i) for i in range(len(texts))], group="bench")
        finally:
            vec.profile = profile
        s, _ = timed(lambda: pool_documents(encoded, factors))
        st.best("pool_factor", s)
        engine.set_observer(None)
        st.best("forward", obs.forward_s)
        st.best("pool", obs.pool_s)
        now = "2026-01-01T00:00:00+00:00"
        models = vec.model_ids()

        def build() -> list[PointRecord]:
            out: list[PointRecord] = []
            k = 0
            for d, cs in zip(docs, chunked, strict=True):
                vs = [e.vectors for e in encoded[k : k + len(cs)]]  # type: ignore[union-attr]
                k += len(cs)
                out += document_points(
                    d, cs, vs, models=models, ingested_at=now, profile_version=vec.version
                )
            [to_point_struct(r, arrays_ok=True) for r in out]
            return out

        s, points = timed(build)
        st.best("point build", s)
        multi = [v for v in points[0].vectors.values() if getattr(v, "ndim", 1) == 2]
        st.tokens_per_chunk = sum(
            p.vectors[n].shape[0] for p in points for n in points[0].vectors
            if getattr(p.vectors[n], "ndim", 1) == 2
        ) / max(1, len(points) * len(multi))  # fmt: skip
        conv_s, write_s = store_floor(points, schema, tmp / "store", batch_points)
        st.best("store conversion", conv_s)
        st.best("store write", write_s)

        async def progress_all() -> None:
            k = 0
            for j in range(len(payloads)):
                n_docs = min(job_size, len(docs) - j * job_size)
                prog = JobProgress(redis, f"bench-{j}", documents=n_docs)
                async with prog:
                    n_chunks = sum(len(c) for c in chunked[k : k + n_docs])
                    k += n_docs
                    prog.add(chunks=n_chunks)
                    await prog.publish()
                    for _ in range(max(1, n_chunks // batch_points)):
                        prog.add(points=batch_points, done=1)
                        await prog.publish()

        t0 = time.perf_counter()
        await progress_all()
        st.best("progress", time.perf_counter() - t0)
    finally:
        await redis.aclose()
        shutil.rmtree(tmp, ignore_errors=True)
    return st, points


def store_floor(
    points: list[PointRecord], schema: CollectionSchema, folder: Path, batch_points: int
) -> tuple[float, float]:
    """Seconds to convert ``points`` for Qdrant Edge and to write them (batches of
    ``batch_points``, each durable in the WAL), through the store's own calls, nothing else
    running."""
    import qdrant_edge as qe

    from poolq.sinks.store.edge import EdgeStore
    from poolq.sinks.store.edge_convert import point as edge_point

    store = EdgeStore(folder)
    try:
        store.create_collection("floor", schema)
        sh = store._shard("floor")
        structs = [to_point_struct(r, arrays_ok=True) for r in points]
        conv = write = 0.0
        gc.collect()
        for i in range(0, len(structs), batch_points):
            batch = structs[i : i + batch_points]
            t0 = time.perf_counter()
            converted = [edge_point(p) for p in batch]
            t1 = time.perf_counter()
            sh.shard.update(qe.UpdateOperation.upsert_points(converted))
            t2 = time.perf_counter()
            conv += t1 - t0
            write += t2 - t1
        return conv, write
    finally:
        store.close()


def grpc_requests_s(points: list[PointRecord], batch_points: int) -> float:
    """Seconds for qdrant-client's server path to build its gRPC upsert requests for ``points``
    (points as the writer converts them for a server, then qdrant-client's REST -> gRPC
    conversion and the serialized request): the client side of a server write, no server."""
    from qdrant_client import grpc
    from qdrant_client.conversions.conversion import RestToGrpc

    t0 = time.perf_counter()
    for i in range(0, len(points), batch_points):
        structs = [to_point_struct(r, arrays_ok=False) for r in points[i : i + batch_points]]
        req = grpc.UpsertPoints(
            collection_name="bench",
            wait=True,
            points=[RestToGrpc.convert_point_struct(p) for p in structs],
        )
        req.SerializeToString()
    return time.perf_counter() - t0
