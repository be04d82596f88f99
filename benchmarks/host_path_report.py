"""The report of ``bench_host_path.py``: the embedded and server paths' targets, the table of its
best figures (stages, store floor, the upserts' client side, the queue runs' rates and CPU per
chunk by process and thread role), and the checks against those targets (exit status 1 on a
miss unless ``--no-targets``)."""

from __future__ import annotations

import argparse
import os
import sys

from benchmarks.figures import save_run
from benchmarks.host_path_runs import CpuUse
from benchmarks.host_path_stages import HOST_STAGES, STORE_STAGES, Stages

TARGET_CHUNKS_S = 600.0  # enqueue -> durable write, default settings
TARGET_CHUNKS_S_POOLED = 1000.0  # with pool_factor = 2
TARGET_HOST_CHUNKS_S = 2500.0  # every stage but the store's conversion and write
TARGET_OF_FLOOR = 0.9  # pipeline chunks/s / store floor points/s
# --server, CPU ms per chunk: encoding + sending the upserts; the worker outside its
# compute thread; Redis and the client; the worker process whole (children included)
TARGET_UPSERT_MS = 0.10
TARGET_WORKER_HOST_MS = 0.6
TARGET_REDIS_CLIENT_MS = 0.15
TARGET_WORKER_MS = 2.3


def report(
    args: argparse.Namespace,
    chunks: int,
    queue_s: dict[str, float],
    st: Stages,
    client: dict[str, float],
    cpu: dict[str, CpuUse],
) -> None:
    n = st.chunks
    pf = args.pool_factor
    print()
    print(
        f"{args.docs} documents, {n} chunks, {st.tokens_per_chunk:.0f} multi-vector rows/chunk, "
        f"jobs of {args.job_size}, pool_factor {pf or 1}, {args.workers} worker process(es) "
        f"on the server; best of {args.rounds} rounds"
        + (", OMP_WAIT_POLICY=PASSIVE" if args.omp_passive else "")
    )
    rows = st.tokens_per_chunk
    print(f"multi-vector bytes/chunk (float32, 128-d): {rows * 128 * 4:.0f}")
    print(f"{'stage':26} {'ms/chunk':>9} {'chunks/s':>10}")
    for name in (*HOST_STAGES, *STORE_STAGES):
        s = st.seconds[name]
        print(f"{name:26} {1000 * s / n:9.3f} {n / s:10.1f}")
    host = sum(st.seconds[x] for x in HOST_STAGES)
    floor = sum(st.seconds[x] for x in STORE_STAGES)
    host_rate, floor_rate = n / host, n / floor
    print(f"{'all but the store':26} {1000 * host / n:9.3f} {host_rate:10.1f}")
    around = host - st.seconds["forward"]  # what a GPU leaves to the host: all but model, store
    print(f"{'  of it, not model':26} {1000 * around / n:9.3f} {n / around:10.1f}  (no forward)")
    print(f"{'embedded store floor':26} {1000 * floor / n:9.3f} {floor_rate:10.1f}")
    for name, s in client.items():
        print(f"{'upserts: ' + name:26} {1000 * s / n:9.3f} {n / s:10.1f}")
    for mode, q in queue_s.items():
        print(f"enqueue -> durable write, {mode}: {chunks / q:7.1f} chunks/s ({q:.2f}s)")
    cores = len(os.sched_getaffinity(0))
    for mode, c in cpu.items():
        used = c.counted_s()
        parts = ", ".join(f"{k} {1000 * v / chunks:.2f}" for k, v in c.seconds.items())
        roles = ", ".join(f"{k} {1000 * v / chunks:.2f}" for k, v in sorted(c.threads.items()))
        print(f"CPU ms/chunk, {mode}: {1000 * used / chunks:.2f} ({parts})")
        print(f"  worker threads: {roles}")
        print(
            f"  {used / queue_s[mode]:.2f} of {cores} cores busy; all {cores} cores at that "
            f"cost: {cores * chunks / used:.0f} chunks/s at most"
        )
    checks = server_checks(chunks, n, client, cpu) if args.server else in_process_checks(
        args, chunks, queue_s["embedded"], host_rate, floor_rate
    )  # fmt: skip
    if args.server and args.figures:
        c = cpu["server"]
        save_run(args.figures, "host-path", {
            "chunks": chunks,
            "cpu_ms_per_chunk": {k: 1000 * v / chunks for k, v in c.seconds.items()},
            "peer_grpc_ms": 1000 * client["qdrant-client gRPC"] / n
            if "qdrant-client gRPC" in client else float("nan"),
            "poolq_upsert_ms": 1000 * client["poolq gRPC (CPU)"] / n,
        })  # fmt: skip
    for what, ok, got in checks:
        print(f"{what}: {got} {'ok' if ok else 'MISS'}")
    if not args.no_targets and not all(ok for _, ok, _ in checks):
        sys.exit(1)


def server_checks(
    chunks: int, n: int, client: dict[str, float], cpu: dict[str, CpuUse]
) -> list[tuple[str, bool, str]]:
    c = cpu["server"]
    ms = {k: 1000 * v / chunks for k, v in c.seconds.items()}
    compute = 1000 * c.threads.get("compute", 0.0) / chunks
    upsert = 1000 * client["poolq gRPC (CPU)"] / n
    worker = ms["worker"] + ms["store process"]
    return [
        (f"upserts encoded + sent <= {TARGET_UPSERT_MS} ms", upsert <= TARGET_UPSERT_MS,
         f"{upsert:.3f}"),
        (f"worker outside compute <= {TARGET_WORKER_HOST_MS} ms",
         worker - compute <= TARGET_WORKER_HOST_MS, f"{worker - compute:.2f}"),
        (f"redis + client <= {TARGET_REDIS_CLIENT_MS} ms",
         ms["redis"] + ms["client"] <= TARGET_REDIS_CLIENT_MS, f"{ms['redis'] + ms['client']:.3f}"),
        (f"worker whole <= {TARGET_WORKER_MS} ms", worker <= TARGET_WORKER_MS, f"{worker:.2f}"),
    ]  # fmt: skip


def in_process_checks(
    args: argparse.Namespace, chunks: int, queue_s: float, host_rate: float, floor_rate: float
) -> list[tuple[str, bool, str]]:
    queue_rate = chunks / queue_s
    target = TARGET_CHUNKS_S_POOLED if (args.pool_factor or 1) >= 2 else TARGET_CHUNKS_S
    return [
        (f"pipeline >= {target:.0f} chunks/s", queue_rate >= target, f"{queue_rate:.0f}"),
        (f"host stages >= {TARGET_HOST_CHUNKS_S:.0f} chunks/s",
         host_rate >= TARGET_HOST_CHUNKS_S, f"{host_rate:.0f}"),
        (f"pipeline / store floor >= {TARGET_OF_FLOOR}", queue_rate / floor_rate >= TARGET_OF_FLOOR,
         f"{queue_rate / floor_rate:.2f}"),
    ]  # fmt: skip
