"""The queue runs of ``bench_host_path.py``: documents through a real client, Redis and
``poolq worker`` process, timed from enqueue to the last durable write, with the CPU time every
process spent on it (``/proc``) and, inside the worker, every role of thread
(``host_path_server.thread_cpu_s``), and the machine's load and stolen time beside it."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from benchmarks.host_path_server import thread_cpu_s
from benchmarks.procs import child_pids, process_cpu_s
from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages


def steal_s() -> float:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


class Conditions:
    """Load and stolen CPU time over one measurement."""

    def __enter__(self) -> Conditions:
        self.steal0 = steal_s()
        return self

    def __exit__(self, *exc: object) -> None:
        self.load = os.getloadavg()[0]
        self.stolen = steal_s() - self.steal0

    def __str__(self) -> str:
        return f"load {self.load:4.1f}, stolen {self.stolen:4.1f}s"


def documents(n: int) -> list[dict]:
    return [{"id": f"doc-{i}", "text": t, "metadata": {"i": i}} for i, t in enumerate(passages(n))]


class CpuUse:
    """CPU seconds over one queue run, by process: the workers' own interpreters (every thread),
    their children (an embedded store's process), Redis, this client, and (not counted) a
    Qdrant endpoint; and the workers' threads by role."""

    def __init__(
        self, worker_pids: list[int], redis_pid: int, endpoint_pid: int | None = None
    ) -> None:
        self.workers, self.redis, self.endpoint = worker_pids, redis_pid, endpoint_pid
        self.seconds: dict[str, float] = {}
        self.threads: dict[str, float] = {}

    def read(self) -> tuple[dict[str, float], dict[str, float]]:
        kids = [k for w in self.workers for k in child_pids(w)]
        procs = {
            "worker": sum(process_cpu_s(w, children=False) for w in self.workers),
            "store process": sum(process_cpu_s(k) for k in kids),
            "redis": process_cpu_s(self.redis),
            "client": process_cpu_s(os.getpid(), children=False),
        }
        if self.endpoint is not None:
            procs["endpoint (not counted)"] = process_cpu_s(self.endpoint)
        threads: dict[str, float] = {}
        for w in self.workers:
            for role, s in thread_cpu_s(w).items():
                threads[role] = threads.get(role, 0.0) + s
        return procs, threads

    def __enter__(self) -> CpuUse:
        self._start = self.read()
        return self

    def __exit__(self, *exc: object) -> None:
        procs, threads = self.read()
        self.seconds = {k: procs[k] - self._start[0].get(k, 0.0) for k in procs}
        self.threads = {k: threads[k] - self._start[1].get(k, 0.0) for k in threads}

    def counted_s(self) -> float:
        return sum(v for k, v in self.seconds.items() if "not counted" not in k)


async def through_queue(
    redis_url: str, docs: list[dict], job_size: int, name: str, cpu: CpuUse | None = None
) -> tuple[float, int]:
    """Seconds from enqueue to the last job done, and the points written."""
    async with PoolqClient(redis_url) as client:
        warm = await client.enqueue(f"{name}-warm", docs[:job_size], job_size=job_size)
        await client.wait(warm)
        with cpu or contextlib.nullcontext():
            t0 = time.perf_counter()
            ids = await client.enqueue(name, docs, job_size=job_size)
            outcomes = await client.wait(ids)  # the default polling, as a user waits
            dt = time.perf_counter() - t0
    bad = [o for o in outcomes if o.status != "done" or o.result is None or o.result.errors]
    if bad:
        raise SystemExit(f"{len(bad)} jobs failed or reported errors: {bad[:2]}")
    return dt, sum(o.result.points for o in outcomes if o.result is not None)
