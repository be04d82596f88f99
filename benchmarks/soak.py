"""Soak: 20,000 chunks through `poolq worker` while faults are injected (one SIGKILL of the
worker, one Redis restart), reporting throughput and that nothing was lost or duplicated.

    python benchmarks/soak.py [--chunks N] [--no-peer] [--peer-chunks N] [--job-size N]

A local Redis and one worker on an embedded Qdrant folder; documents (standard-library
passages, one in eight a multi-chunk document of ten passages) are enqueued in jobs of
``--job-size`` until they hold at least ``--chunks`` chunks (counted with the worker's own
chunker, in this process, before the run). While the queue drains:

* after ``--kill-at`` of the jobs are done, the worker is SIGKILLed and a new one started at
  once on the same folder (its jobs in flight are handed back once its heartbeat expires);
* after ``--restart-at`` of the jobs are done, Redis is restarted (append-only file kept).

At the end every job must be done, and the collection exact: the enqueued document ids and no
others, each document's chunk indices exactly 0..chunk_count-1, its chunk_count the one computed
before the run, and the total number of points equal to the sum of the chunk counts and to the
sum of the jobs' ``points``. The same check runs on a fault-free peer (``--peer``, on by default:
its own Redis, worker and folder, ``--peer-chunks`` chunks) whose rate is the comparison.
Exit status 1 if anything was lost or duplicated (or a job failed).

Timings come from a shared CPU machine: compare the two rates of one run, not across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arq.constants import result_key_prefix
from arq.jobs import deserialize_result

from poolq.ingest.client import JobOutcome, PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.sinks.store.edge import EdgeStore
from poolq.wire import constants
from poolq.wire import payload as fields
from poolq.wire.serialization import deserialize
from poolq.worker.config.settings import Settings
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from poolq.worker.runtime.vectorizer import Vectorizer

COLLECTION = "soak"
POLL_S = 0.2


# ---------------------------------------------------------------- corpus


async def chunk_counter():
    """The worker's chunker (default profile), loaded here once, to size the corpus exactly."""
    vec = await Vectorizer.start(Settings().profile)
    await vec.stop()  # the chunker only needs the tokenizers
    return vec.chunk


def corpus(target_chunks: int, count_chunks, prefix: str) -> tuple[list[dict], dict[str, int]]:
    """Documents holding at least ``target_chunks`` chunks, and each one's expected chunk count.
    Passages repeat once the ~2,000 distinct ones are used up; each copy is made distinct."""
    base = passages(100_000)
    memo: dict[str, int] = {}
    docs: list[dict] = []
    expected: dict[str, int] = {}
    total = 0
    i = 0
    while total < target_chunks:
        copy = i // len(base)
        if i % 8:
            text = base[i % len(base)]
        else:  # a multi-chunk document: ten passages as paragraphs
            text = "\n\n".join(base[(i + k) % len(base)] for k in range(10))
        if copy:
            text = f"(copy {copy}) {text}"
        n = memo.get(text)
        if n is None:
            n = memo[text] = len(count_chunks(text))
        doc_id = f"{prefix}-{i:06d}"
        docs.append({"id": doc_id, "text": text, "metadata": {"i": i, "copy": copy}})
        expected[doc_id] = n
        total += n
        i += 1
    return docs, expected


# ---------------------------------------------------------------- exactness


@dataclass
class Exactness:
    points: int  # in the collection
    chunk_count_sum: int  # sum of the stored chunk_count of each document
    missing_docs: list[str]
    extra_docs: list[str]
    bad_indices: list[str]  # documents whose indices are not exactly 0..chunk_count-1
    wrong_count: list[str]  # documents whose chunk_count differs from the one computed before

    @property
    def exact(self) -> bool:
        return not (
            self.missing_docs
            or self.extra_docs
            or self.bad_indices
            or self.wrong_count
            or self.points != self.chunk_count_sum
        )


def check_exact(qpath: Path, expected: dict[str, int]) -> Exactness:
    """The logic of tests/integration/test_reliability.py::assert_exact, reporting instead of
    asserting (open the folder only once the worker has stopped)."""
    client = EdgeStore(qpath)
    try:
        seen: dict[str, list[int]] = {}
        counts: dict[str, int] = {}
        offset = None
        total = 0
        while True:
            batch, offset = client.scroll(
                COLLECTION,
                limit=512,
                offset=offset,
                with_payload=[fields.DOC_ID, fields.CHUNK_INDEX, fields.CHUNK_COUNT],
            )
            for p in batch:
                payload = p.payload or {}
                seen.setdefault(payload[fields.DOC_ID], []).append(payload[fields.CHUNK_INDEX])
                counts[payload[fields.DOC_ID]] = payload[fields.CHUNK_COUNT]
            total += len(batch)
            if offset is None:
                break
    finally:
        client.close()
    return Exactness(
        points=total,
        chunk_count_sum=sum(counts.values()),
        missing_docs=sorted(set(expected) - set(seen)),
        extra_docs=sorted(set(seen) - set(expected)),
        bad_indices=sorted(d for d, ix in seen.items() if sorted(ix) != list(range(counts[d]))),
        wrong_count=sorted(d for d in seen if d in expected and counts[d] != expected[d]),
    )


# ---------------------------------------------------------------- one run


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


# ---------------------------------------------------------------- printing


def print_report(r: RunReport) -> None:
    ex = r.exactness
    assert ex is not None
    rate = ex.points / r.wall_s if r.wall_s else 0.0
    retried = {j: t for j, t in r.job_tries.items() if t > 1}
    print(f"[{r.label}]")
    print(
        f"  {ex.points} chunks in the collection ({r.expected_chunks} enqueued), "
        f"{r.documents} documents, {r.jobs} jobs"
    )
    print(f"  wall {r.wall_s:.1f}s (enqueue -> last job done): {rate:.1f} chunks/s")
    for e in r.events:
        print(f"    {e}")
    done = sum(o.status == "done" for o in r.outcomes.values())
    print(
        f"  jobs: {done} done, {len(r.failed)} failed, {r.jobs - len(r.outcomes)} unfinished; "
        f"{r.job_errors} document errors; sum of job points {r.job_points}"
    )
    print(
        f"  arq tries: {len(retried)} jobs ran more than once "
        f"(max try {max(r.job_tries.values(), default=0)}); dead-letter list: {r.dlq}"
    )
    for hb in r.heartbeats:
        print(
            f"  worker pid {hb.get('pid')}{' (SIGKILLed; last heartbeat)' if hb.get('killed') else ''}:"
            f" jobs_done {hb.get('jobs_done')}, jobs_retried {hb.get('jobs_retried')},"
            f" jobs_failed {hb.get('jobs_failed')}, sink_retries {hb.get('sink_retries')}"
        )
    lost = len(ex.missing_docs) + max(0, r.expected_chunks - ex.points)
    print(
        f"  exact: {'yes' if r.ok else 'NO'} | docs missing {len(ex.missing_docs)}, extra "
        f"{len(ex.extra_docs)}, bad chunk indices {len(ex.bad_indices)}, chunk_count differs "
        f"{len(ex.wrong_count)} | points {ex.points} vs sum of chunk_count "
        f"{ex.chunk_count_sum} vs sum of job points {r.job_points} vs expected "
        f"{r.expected_chunks} (lost >= {lost})"
    )
    for name, items in (
        ("missing", ex.missing_docs),
        ("extra", ex.extra_docs),
        ("bad indices", ex.bad_indices),
        ("chunk_count differs", ex.wrong_count),
    ):
        if items:
            print(f"    {name}: {items[:10]}{' ...' if len(items) > 10 else ''}")
    for o in r.failed[:5]:
        print(f"    job {o.job_id} {o.status}: {o.error}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--chunks", type=int, default=20_000, help="chunks in the soak run")
    ap.add_argument("--peer", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--peer-chunks", type=int, default=5_000, help="chunks in the peer run")
    ap.add_argument("--job-size", type=int, default=32)
    ap.add_argument("--kill-at", type=float, default=0.25, help="fraction of jobs done")
    ap.add_argument("--restart-at", type=float, default=0.60, help="fraction of jobs done")
    ap.add_argument("--keep", action="store_true", help="keep the data folders and logs")
    args = ap.parse_args()

    count = asyncio.run(chunk_counter())
    root = Path(tempfile.mkdtemp(prefix="poolq-soak-"))
    reports: list[RunReport] = []
    try:
        if args.peer:
            peer_chunks = min(args.peer_chunks, args.chunks)
            docs, expected = corpus(peer_chunks, count, "peer")
            reports.append(
                run_one("peer, no faults", root / "peer", docs, expected, args.job_size, [])
            )
        docs, expected = corpus(args.chunks, count, "soak")
        soak = run_one(
            "soak, SIGKILL + Redis restart",
            root / "soak",
            docs,
            expected,
            args.job_size,
            [],
            kill_at=args.kill_at,
            restart_at=args.restart_at,
        )
        reports.append(soak)
    finally:
        ok = bool(reports) and all(r.ok for r in reports)
        if args.keep or not ok:
            print(f"data and worker logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    print(
        f"soak benchmark: default profile (dense + colbert + sparse), jobs of {args.job_size}, "
        f"one worker (max_jobs {Settings().max_jobs}), {os.cpu_count()} CPUs"
    )
    for r in reports:
        print_report(r)
    ex = soak.exactness
    assert ex is not None
    soak_rate = ex.points / soak.wall_s
    line = f"soak: {ex.points} chunks, {soak.documents} documents, {soak.jobs} jobs in {soak.wall_s:.1f}s = {soak_rate:.1f} chunks/s"
    if args.peer:
        peer = reports[0]
        assert peer.exactness is not None
        peer_rate = peer.exactness.points / peer.wall_s
        line += f"; fault-free peer {peer_rate:.1f} chunks/s ({peer.exactness.points} chunks); ratio soak/peer {soak_rate / peer_rate:.2f}"
    print(line)
    verdict = (
        "nothing lost or duplicated"
        if all(r.ok for r in reports)
        else "LOST OR DUPLICATED (or failed jobs)"
    )
    print(f"result: {verdict}")
    sys.exit(0 if all(r.ok for r in reports) else 1)


if __name__ == "__main__":
    main()
