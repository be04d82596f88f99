"""Listing and fetching a bucket prefix: poolq's stage against the libraries it could be built on.

Against a real S3 API on this machine (moto's server, ``tests/sources/s3_server.py``) holding
``--objects`` objects of ``--kb`` KB, in one run:

* the candidates, each listing the prefix and fetching every object its own fastest way:
  obstore (``get_async``, ``--in-flight`` at once), s3fs (``cat`` of the listing: its own
  concurrent batches) and boto3 (a pool of ``--in-flight`` threads); objects/s each;
* poolq's list-and-fetch stage (``worker/fetch/objects.py`` listing pages,
  ``worker/reindex/objects.py`` fetching ``--in-flight`` at once, as a sync does): its ratio to the chosen
  library's own loop (obstore) must be >= 0.8;
* a second sync over the unchanged prefix: listing plus comparison with the collection's
  inventory, no fetch; seconds per 10,000 objects must be <= 2. ``--worker`` also times it as
  a real worker's job (Redis, the default model, the embedded store; the same target), after a
  first sync of ``--objects`` small objects.

Prints one line per figure and the ratios; exits 1 on a miss. ``--no-peers`` skips s3fs and
boto3 (the chosen library's loop always runs: the ratio needs it). CPU ms per object of this
process (moto runs in a process of its own) is printed for each.

    .venv/bin/python -m benchmarks.bench_sources
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.procs import machine_state, process_cpu_s
from tests.sources.s3_server import S3Server

BUCKET = "bench-bucket"
PREFIX = "docs/"


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def seed(server: S3Server, n: int, size: int) -> None:
    client = server.bucket(BUCKET)
    body = (b"poolq benchmark text. " * (size // 22 + 1))[:size]

    def put(i: int) -> None:
        client.put_object(Bucket=BUCKET, Key=f"{PREFIX}{i:06d}.txt", Body=body + str(i).encode())

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(put, range(n)))


async def obstore_loop(in_flight: int) -> int:
    import obstore
    from obstore.store import S3Store

    store = S3Store(BUCKET, client_options={"allow_http": True})
    keys = [m["path"] for batch in obstore.list(store, PREFIX.rstrip("/")) for m in batch]
    room = asyncio.Semaphore(in_flight)
    total = 0

    async def one(key: str) -> None:
        nonlocal total
        async with room:
            r = await obstore.get_async(store, key)
            total += len(await r.bytes_async())

    await asyncio.gather(*(one(k) for k in keys))
    return len(keys)


def s3fs_loop(in_flight: int) -> int:
    import s3fs

    fs = s3fs.S3FileSystem(
        endpoint_url=os.environ["AWS_ENDPOINT_URL"], skip_instance_cache=True,
        config_kwargs={"max_pool_connections": in_flight},
    )  # fmt: skip
    paths = fs.find(f"{BUCKET}/{PREFIX}")
    out = fs.cat(paths, batch_size=in_flight)
    return len(out)


def boto3_loop(in_flight: int) -> int:
    import boto3
    from botocore.config import Config

    c = boto3.client("s3", config=Config(max_pool_connections=in_flight))
    keys = [
        o["Key"]
        for page in c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=PREFIX)
        for o in page.get("Contents", [])
    ]
    with ThreadPoolExecutor(in_flight) as pool:
        sizes = list(
            pool.map(lambda k: len(c.get_object(Bucket=BUCKET, Key=k)["Body"].read()), keys)
        )
    return len(sizes)


async def poolq_stage(in_flight: int) -> int:
    from poolq.wire.uris import parse_uri
    from poolq.worker.fetch.fetcher import Fetcher
    from poolq.worker.reindex.objects import fetch_each

    fetcher = Fetcher()
    prefix = parse_uri(f"s3://{BUCKET}/{PREFIX}")
    n = 0

    async def count(_: Any, got: Any) -> None:
        nonlocal n
        n += not isinstance(got, Exception)

    async for page in fetcher.objects.pages(prefix):
        await fetch_each(fetcher, page, 1 << 30, count, in_flight)
    return n


async def second_sync() -> int:
    """Listing and comparison over an unchanged prefix, the inventory as a first sync left it."""
    from poolq.sinks.inventory import StoredDocument
    from poolq.wire.uris import parse_uri
    from poolq.worker.fetch.fetcher import Fetcher
    from poolq.worker.reindex.objects import (
        StoredUnder,
        metadata_hash,
        object_metadata,
        plan_page,
    )  # fmt: skip

    fetcher = Fetcher()
    prefix = parse_uri(f"s3://{BUCKET}/{PREFIX}")
    stored: dict[str, StoredDocument] = {}
    async for page in fetcher.objects.pages(prefix):
        for o in page:
            meta = metadata_hash(object_metadata(prefix, o))
            stored[o.uri] = StoredDocument(o.uri, "h", meta, "v1", 1, None, "f")
    import obstore

    t0 = time.perf_counter()  # the listing alone, as obstore gives it: the store's share
    store = fetcher.objects.store(prefix)
    for _ in obstore.list(store, PREFIX.rstrip("/"), chunk_size=1000):
        pass
    second_sync.listing_s = time.perf_counter() - t0  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    under = StoredUnder(stored, prefix)
    after, unchanged, fetch = None, 0, 0
    async for page in fetcher.objects.pages(prefix):
        plan = plan_page(page, under, prefix, "v1", after=after)
        unchanged += len(plan.unchanged)
        fetch += len(plan.to_fetch) + len(plan.removed)
        after = page[-1].uri
    assert fetch == 0, fetch
    second_sync.seconds = time.perf_counter() - t0  # type: ignore[attr-defined]
    return unchanged


def worker_second_sync(server: S3Server, n: int) -> tuple[float, float]:
    """A real worker (Redis, the default model, the embedded store) syncs ``n`` small objects,
    then syncs them again unchanged: (first sync's seconds, second sync's seconds, as the job
    reports them: the collection's inventory, listing and comparison, nothing fetched)."""
    import tempfile
    from pathlib import Path

    from poolq.ingest.client import PoolqClient
    from poolq.worker.dev.local_redis import LocalRedis
    from poolq.worker.dev.local_worker import WorkerProcess

    client = server.client()

    def put(i: int) -> None:
        client.put_object(
            Bucket=BUCKET, Key=f"small/{i:06d}.md", Body=f"# Note {i}\n\nFact {i}.".encode()
        )

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(put, range(n)))
    env = {**server.env(), "POOLQ_SOURCE_URIS": f"s3://{BUCKET}/"}

    async def sync(url: str) -> Any:
        async with PoolqClient(url) as c:
            (o,) = await c.wait([await c.reindex(f"s3://{BUCKET}/small/", "bench")], timeout_s=1800)
            assert o.status == "done", o.error
            return o.result

    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalRedis(Path(tmp) / "redis") as redis,
        WorkerProcess(redis.url, Path(tmp) / "q", env=env),
    ):
        first = asyncio.run(sync(redis.url))
        second = asyncio.run(sync(redis.url))
    assert first.new == n and second.unchanged == n and second.fetched == 0, second
    return first.seconds, second.seconds


def timed(
    name: str, fn: Callable[[], Any], rounds: int, store_pid: int | None
) -> tuple[float, float]:
    """Best objects/s over ``rounds``, and CPU ms per object of that round: the client (this
    process) and the store (moto's process, when it has one)."""
    best, cpu_ms, store_ms = 0.0, 0.0, 0.0
    for _ in range(rounds):
        s0 = process_cpu_s(store_pid) if store_pid else 0.0
        c0, t0 = cpu_s(), time.perf_counter()
        n = fn()
        dt, dc = time.perf_counter() - t0, cpu_s() - c0
        ds = (process_cpu_s(store_pid) - s0) if store_pid else 0.0
        if n / dt > best:
            best, cpu_ms, store_ms = n / dt, 1000 * dc / max(n, 1), 1000 * ds / max(n, 1)
    print(f"{name:<28} {best:8.0f} objects/s  CPU ms/object: client {cpu_ms:5.2f}, "
          f"store (moto) {store_ms:5.2f}")  # fmt: skip
    return best, cpu_ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--kb", type=int, default=50)
    ap.add_argument("--in-flight", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument(
        "--worker", action="store_true",
        help="also time a real worker's second sync (Redis, the default model; slower)",
    )  # fmt: skip
    ap.add_argument("--same-process", action="store_true", help="moto in a thread of this process")
    a = ap.parse_args(argv)
    with machine_state() as state, S3Server(process=not a.same_process) as server:
        os.environ.update(server.env())
        t0 = time.perf_counter()
        seed(server, a.objects, a.kb * 1000)
        print(f"moto at {server.endpoint}: {a.objects} objects of {a.kb} KB "
              f"written in {time.perf_counter() - t0:.1f}s")  # fmt: skip
        k = a.in_flight
        pid = server.process.pid if server.process is not None else None
        results = {}
        # interleaved: each candidate meets the same moment of the machine
        results["obstore"] = timed(
            "obstore get_async", lambda: asyncio.run(obstore_loop(k)), a.rounds, pid
        )
        if not a.no_peers:
            results["s3fs"] = timed("s3fs cat", lambda: s3fs_loop(k), a.rounds, pid)
            results["boto3"] = timed("boto3 threads", lambda: boto3_loop(k), a.rounds, pid)
        results["poolq"] = timed(
            "poolq list-and-fetch", lambda: asyncio.run(poolq_stage(k)), a.rounds, pid
        )
        n = asyncio.run(second_sync())
        per_10k = second_sync.seconds * 10_000 / max(n, 1)  # type: ignore[attr-defined]
        job = worker_second_sync(server, a.objects) if a.worker else None
    ratio = results["poolq"][0] / results["obstore"][0]
    for peer in ("s3fs", "boto3"):
        if peer in results:
            print(f"obstore / {peer}: {results['obstore'][0] / results[peer][0]:.2f}x")
    print(f"poolq / obstore's own loop: {ratio:.2f} (needs >= 0.8)")
    print(f"listing alone (obstore, nothing compared): {second_sync.listing_s:.3f}s for {n} "  # type: ignore[attr-defined]
          f"objects; machine: load {state['load']:.1f} on {os.cpu_count()} CPUs, "
          f"steal {state['steal']:.1f}%")  # fmt: skip
    print(f"second sync (list + compare, no fetch): {second_sync.seconds:.3f}s for {n} objects = "  # type: ignore[attr-defined]
          f"{per_10k:.2f}s per 10,000 (needs <= 2)")  # fmt: skip
    ok = ratio >= 0.8 and per_10k <= 2.0
    if job is not None:
        job_10k = job[1] * 10_000 / a.objects
        print(f"worker: first sync of {a.objects} small objects {job[0]:.1f}s; second sync (the "
              f"job: inventory, listing, comparison) {job[1]:.2f}s = {job_10k:.2f}s per 10,000 "
              "(needs <= 2)")  # fmt: skip
        ok = ok and job_10k <= 2.0
    print("PASS" if ok else "MISS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
