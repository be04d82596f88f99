"""One run of ``soak.py``: its own Redis and worker on a folder, the documents enqueued and the
queue drained while the faults are injected when due (the worker SIGKILLed and a new one
started, Redis restarted), with what happened when, the jobs' outcomes and tries, the
workers' last heartbeats, and the exactness check at the end."""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from arq.constants import result_key_prefix
from arq.jobs import deserialize_result

from benchmarks.soak_check import COLLECTION, Exactness, check_exact
from poolq.ingest.client import JobOutcome, PoolqClient
from poolq.wire import constants
from poolq.wire.serialization import deserialize
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

POLL_S = 0.2


@dataclass
class RunReport:
    label: str
    documents: int
    expected_chunks: int
    jobs: int
    wall_s: float = 0.0
    outcomes: dict[str, JobOutcome] = field(default_factory=dict)
    job_tries: dict[str, int] = field(default_factory=dict)  # arq's job_try of the final run
    dlq: int = 0
    heartbeats: list[dict] = field(default_factory=list)  # each worker's last one seen
    events: list[str] = field(default_factory=list)
    exactness: Exactness | None = None

    @property
    def failed(self) -> list[JobOutcome]:
        return [o for o in self.outcomes.values() if o.status != "done"]

    @property
    def job_points(self) -> int:
        return sum(o.result.points for o in self.outcomes.values() if o.result is not None)

    @property
    def job_errors(self) -> int:
        return sum(len(o.result.errors) for o in self.outcomes.values() if o.result is not None)

    @property
    def ok(self) -> bool:
        ex = self.exactness
        return (
            not self.failed
            and self.job_errors == 0
            and len(self.outcomes) == self.jobs
            and ex is not None
            and ex.exact
            and ex.points == self.job_points == self.expected_chunks
        )


def heartbeat_of(w: WorkerProcess) -> dict | None:
    try:
        return w.stats()
    except (LookupError, AssertionError):
        return None


async def running_jobs(client: PoolqClient, worker_id: str) -> list[str]:
    key = constants.WORKER_JOBS_KEY.format(worker_id=worker_id)
    return sorted(j.decode() for j in await client.redis.smembers(key))  # type: ignore[misc]


@dataclass
class Fault:
    at_fraction: float | None  # of the jobs done; None: never
    t: float | None = None  # when it was injected
    next_done: float | None = None  # the first job completion after it
    inflight: list[str] = field(default_factory=list)  # SIGKILL: the jobs the worker held
    recovered: float | None = None  # SIGKILL: when all of those were done

    def due(self, n_done: int, n_jobs: int) -> bool:
        return (
            self.at_fraction is not None and self.t is None and n_done >= self.at_fraction * n_jobs
        )


async def drive(
    report: RunReport,
    redis_server: LocalRedis,
    qpath: Path,
    docs: list[dict],
    expected: dict[str, int],
    job_size: int,
    worker_args: list[str],
    kill_at: float | None,
    restart_at: float | None,
) -> None:
    url = redis_server.url
    worker = WorkerProcess(url, qpath, *worker_args).start()
    kill, restart = Fault(kill_at), Fault(restart_at)
    t0 = time.perf_counter()

    def event(t: float, what: str) -> None:
        report.events.append(f"t={t - t0:7.1f}s {what}")

    try:
        async with PoolqClient(url) as client:
            t0 = time.perf_counter()
            ids = await client.enqueue(COLLECTION, docs, job_size=job_size)
            report.jobs = len(ids)
            event(time.perf_counter(), f"enqueued {len(ids)} jobs")
            pending = list(ids)
            done_at: dict[str, float] = {}
            while pending:
                finished = await client.finished(pending)
                now = time.perf_counter()
                for job_id, o in finished.items():
                    report.outcomes[job_id] = o
                    done_at[job_id] = now
                if finished:
                    pending = [j for j in pending if j not in finished]
                    for fault, name in ((kill, "the SIGKILL"), (restart, "the Redis restart")):
                        if fault.t is not None and fault.next_done is None:
                            fault.next_done = now
                            event(
                                now, f"first job done after {name}: {now - fault.t:.1f}s after it"
                            )
                if (
                    kill.t is not None
                    and kill.recovered is None
                    and all(j in done_at for j in kill.inflight)
                ):
                    kill.recovered = now
                    event(
                        now,
                        f"all {len(kill.inflight)} jobs the killed worker held are done: "
                        f"{now - kill.t:.1f}s after the SIGKILL",
                    )
                n_done = len(report.outcomes)
                if kill.due(n_done, len(ids)):
                    hb = heartbeat_of(worker)
                    if hb is not None:
                        report.heartbeats.append(hb | {"killed": True})
                        kill.inflight = await running_jobs(client, hb["worker_id"])
                    pid = worker.proc.pid if worker.proc else None
                    worker.stop(signal.SIGKILL)
                    kill.t = time.perf_counter()
                    event(
                        kill.t,
                        f"SIGKILL worker pid {pid} at {n_done}/{len(ids)} jobs done, "
                        f"{len(kill.inflight)} jobs running in it",
                    )
                    worker = await asyncio.to_thread(WorkerProcess(url, qpath, *worker_args).start)
                    t_ready = time.perf_counter()
                    new_pid = worker.proc.pid if worker.proc else None
                    event(
                        t_ready,
                        f"new worker pid {new_pid} ready, {t_ready - kill.t:.1f}s after the SIGKILL",
                    )
                    continue
                if restart.due(n_done, len(ids)):
                    restart.t = time.perf_counter()
                    await asyncio.to_thread(redis_server.restart)
                    t_up = time.perf_counter()
                    event(
                        restart.t,
                        f"Redis restarted at {n_done}/{len(ids)} jobs done "
                        f"(down and answering again in {t_up - restart.t:.1f}s)",
                    )
                    continue
                if pending:
                    await asyncio.sleep(POLL_S)
            report.wall_s = time.perf_counter() - t0
            event(time.perf_counter(), f"all {len(ids)} jobs finished")

            raws = await client.redis.mget([result_key_prefix + j for j in ids])
            for job_id, raw in zip(ids, raws, strict=True):
                if raw is not None:
                    info = deserialize_result(raw, deserializer=deserialize)
                    report.job_tries[job_id] = int(info.job_try)
            report.dlq = int(await client.redis.hlen(constants.DEAD_LETTER_KEY))  # type: ignore[misc]
    finally:
        pid = worker.proc.pid if worker.proc else None
        worker.stop()
    # the stopped worker's final heartbeat (written on shutdown, kept a while)
    report.heartbeats += [h for h in worker.heartbeats() if h.get("pid") == pid]
    report.exactness = check_exact(qpath, expected)


def run_one(
    label: str,
    root: Path,
    docs: list[dict],
    expected: dict[str, int],
    job_size: int,
    worker_args: list[str],
    kill_at: float | None = None,
    restart_at: float | None = None,
) -> RunReport:
    report = RunReport(label, len(docs), sum(expected.values()), 0)
    with LocalRedis(root / "redis") as redis_server:
        asyncio.run(
            drive(
                report,
                redis_server,
                root / "qdrant",
                docs,
                expected,
                job_size,
                worker_args,
                kill_at,
                restart_at,
            )
        )
    return report
