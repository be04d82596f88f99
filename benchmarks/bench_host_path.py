"""The host path around a near-free model: chunks/s from enqueue to durable write (real Redis,
a real ``poolq worker`` process, the embedded Qdrant Edge store), a per-stage breakdown, and
the store's own floor at the same shapes, all in one run. Exit status 1 on a missed target.

    python benchmarks/bench_host_path.py [--docs N] [--job-size N] [--rounds N]
                                         [--pool-factor N] [--server [--workers N]]
                                         [--no-targets]

The model (``host_path_model.py``) is a random 1-layer, hidden-128 BERT serving ``dense`` and
a 128-dim ``colbert`` multi-vector, built at run time; the documents are standard-library
docstrings (``ingest/sample_corpus.py``). Each stage is measured alone in this process
(``host_path_stages.py``): decode (msgpack job + validation), chunk, tokenize, forward, pool,
point build, store conversion, store write (batches of the writer's size, each durable in
the WAL), progress (Redis). The store floor is conversion + write alone, points/s. The
upserts' client side is printed beside it: qdrant-client building them as gRPC messages and as
REST bodies (no server), and with ``--server`` poolq's own encoder sending them to the
Qdrant-protocol stand-in (CPU of this process).

``--server`` (``host_path_server.py``) adds a worker (``--workers N``: N of them) writing over
gRPC to the stand-in, which it starts, beside the worker on the embedded store; its targets are
the server path's, in CPU ms per chunk. Without it, the targets are the embedded path's chunks/s.

The queue run also reads the CPU time every process spent on it (``/proc``: the workers with
all their threads, by role, an embedded store's process, Redis, the client; the stand-in
printed but not counted) and prints it per chunk, with the rate the machine's cores could give
at that cost if every one of them did nothing else.

Rounds alternate the queue run and the stage runs; each figure is its best round. Load
(``os.getloadavg``) and CPU time stolen (``/proc/stat``) are printed beside each figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import tomllib
from pathlib import Path

if "--omp-passive" in sys.argv:  # before torch loads libgomp (workers inherit it)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from benchmarks.host_path_model import build_tiny_bert, profile_toml
from benchmarks.host_path_report import report
from benchmarks.host_path_runs import Conditions, CpuUse, documents, through_queue
from benchmarks.host_path_server import rest_bodies_s, upserts_cpu_s
from benchmarks.host_path_stages import HOST_STAGES, Stages, grpc_requests_s, measure
from poolq.sinks.schema import CollectionSchema
from poolq.worker.config.profile import Profile
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from poolq.worker.runtime.vectorizer import Vectorizer
from tests.support.endpoint_process import EndpointProcess


async def stages_round(
    profile: Profile,
    docs: list[dict],
    job_size: int,
    batch_points: int,
    redis_url: str,
    endpoint_url: str | None,
) -> tuple[Stages, dict[str, float]]:
    """The per-stage figures, and the writes' client side (seconds for all the chunks): what
    qdrant-client spends building the upserts as gRPC messages and as REST bodies, and, with an
    endpoint, the CPU of encoding and sending them through ``GrpcStore``."""
    vec = await Vectorizer.start(profile)
    # the forward below runs with the intra-op threads chosen here, in a quiet process; a worker
    # beside its store process usually gets fewer (its CPU budget counts that process)
    print(f"  stages: {torch.get_num_threads()} intra-op threads", flush=True)
    try:
        schema = CollectionSchema("floor", tuple(vec.vector_specs()), profile.collection)
        warm = [c.text for c in vec.chunk(docs[0]["text"])]
        await vec.encode(warm, ["w"] * len(warm))
        st, points = await measure(
            vec, docs, schema, job_size=job_size, batch_points=batch_points,
            redis_url=redis_url,
        )  # fmt: skip
    finally:
        await vec.stop()  # its threads idle from here: nothing else runs in this process
    client = {
        "qdrant-client gRPC": grpc_requests_s(points, batch_points),
        "qdrant-client REST": rest_bodies_s(points, batch_points),
    }
    if endpoint_url is not None:
        cpu_s, _ = upserts_cpu_s(points, schema, endpoint_url, batch_points)
        client["poolq gRPC (CPU)"] = cpu_s
    return st, client


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--job-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pool-factor", type=int, default=None)
    ap.add_argument("--no-targets", action="store_true", help="print the figures, exit 0")
    ap.add_argument(
        "--server",
        action="store_true",
        help="a worker writing to the Qdrant endpoint over gRPC (started here) beside one on the "
        "embedded store; targets: CPU ms per chunk",
    )
    ap.add_argument(
        "--workers", type=int, default=1, help="worker processes on the server (with --server)"
    )
    ap.add_argument(
        "--omp-passive",
        action="store_true",
        help="OMP_WAIT_POLICY=PASSIVE here and in the workers (OpenMP threads sleep at once "
        "between parallel regions instead of spinning on the cores the host path needs)",
    )
    ap.add_argument(
        "--compare-in-process",
        action="store_true",
        help="also run a worker with the store in its own interpreter (store_process = false), "
        "interleaved with the default one: the before/after of sinks/store/process.py",
    )
    ap.add_argument("--figures", type=Path, help="write the run's JSON and its plot here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="poolq-host-"))
    model = build_tiny_bert(tmp / "model")
    toml = profile_toml(model, args.pool_factor)
    profile = Profile.from_dict(tomllib.loads(toml))
    modes = ["server"] if args.server else []
    modes += ["embedded"] + (["in-process store"] if args.compare_in_process else [])
    docs = documents(args.docs)
    batch_points = 128  # the writer's default batch
    best_q = dict.fromkeys(modes, float("inf"))
    best_cpu: dict[str, CpuUse] = {}
    chunks = 0
    best_st = Stages()
    client: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        endpoint = None
        if args.server:
            endpoint = stack.enter_context(EndpointProcess(tmp / "endpoint"))
        urls, cpus = {}, {}
        for mode in modes:
            cfg = tmp / f"poolq-{mode}.toml"
            cfg.write_text(f"[worker]\nstore_process = {str(mode != 'in-process store').lower()}"
                           f"\n\n{toml}")  # fmt: skip
            server = stack.enter_context(LocalRedis(tmp / f"redis-{mode}"))
            workers = []
            # several processes share a server; an embedded folder takes one worker
            for i in range(args.workers if mode == "server" else 1):
                worker = WorkerProcess(
                    server.url,
                    tmp / f"qdrant-{mode}-{i}",
                    env={"POOLQ_CONFIG": str(cfg)},
                    qdrant_url=endpoint.url if mode == "server" and endpoint else None,
                )
                stack.callback(worker.stop)
                worker.start(ready_timeout_s=900)  # a shared machine under load starts slowly
                assert worker.proc is not None
                workers.append(worker.proc.pid)
            urls[mode] = server.url
            assert server.proc is not None
            ep_pid = endpoint.proc.pid if mode == "server" and endpoint and endpoint.proc else None
            cpus[mode] = (workers, server.proc.pid, ep_pid)
        for r in range(args.rounds):
            for mode, url in urls.items():
                cpu = CpuUse(*cpus[mode])
                with Conditions() as c:
                    dt, chunks = asyncio.run(
                        through_queue(url, docs, args.job_size, f"bench{r}", cpu)
                    )
                if dt < best_q[mode]:
                    best_q[mode], best_cpu[mode] = dt, cpu
                print(
                    f"round {r + 1}: queue, {mode:16} {chunks / dt:7.1f} chunks/s ({dt:.2f}s; {c})",
                    flush=True,
                )
            with Conditions() as c:
                st, cl = asyncio.run(
                    stages_round(
                        profile, docs, args.job_size, batch_points, urls[modes[-1]],
                        endpoint.url if endpoint else None,
                    )
                )  # fmt: skip
            for name, s in st.seconds.items():
                best_st.best(name, s)
            best_st.chunks, best_st.tokens_per_chunk = st.chunks, st.tokens_per_chunk
            client = {k: min(v, client.get(k, float("inf"))) for k, v in cl.items()}
            host = sum(st.seconds[n] for n in HOST_STAGES)
            print(f"round {r + 1}: stages, host {st.chunks / host:7.1f} chunks/s ({c})", flush=True)
    report(args, chunks, best_q, best_st, client, best_cpu)


if __name__ == "__main__":
    main()
