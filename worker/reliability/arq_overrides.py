"""The one place poolq overrides arq's private methods (arq is in maintenance mode; everything
else goes through its public hooks and constructor arguments).

:class:`PoolqWorker` rides out Redis outages and reports jobs that fail before they run:

* ``_poll_iteration``: a Redis error inside one poll (a WATCH-ed check cannot be retried by the
  client) would end ``Worker.main()`` and the process; here it is logged and the next poll tries
  again;
* ``run_job``: a job whose bookkeeping failed on Redis before or after it ran is handed back to
  the queue (its in-progress key dropped once Redis answers) instead of waiting out arq's job
  timeout; re-running it rewrites the same points;
* ``start_jobs``: admission by capacity (``runtime/admission.py``): of the job ids one poll
  read (in score order: interactive jobs first), a bulk job is started only while the worker's
  engines have room, and the rest stay in Redis (when there is none, a job's lane is read from
  its record, its ``priority``, as the engines read it); and a job already running in this worker is
  never started a second time here (its in-progress mark, if something dropped it, is set back);
  a job is started in one round trip (a script doing what arq's transaction does, and reading
  the record's size for admission) where arq makes five;
* ``finish_failed_job``: jobs arq fails without running them (expired, max tries exceeded,
  unknown function) are passed to :attr:`PoolqWorker.failed_unrun` listeners (metrics);
* ``handle_sig_wait_for_completion`` (SIGTERM / Ctrl-C with a grace period): logs at once that
  the worker is draining, how many jobs are running and for how long they may finish; a second
  Ctrl-C (SIGINT) stops at once through arq's ``handle_sig``: the running jobs are cancelled, and
  arq puts each back in the queue with its in-progress mark dropped, so another worker takes it
  at once (re-running a job rewrites the same points).

``poolq worker`` constructs a :class:`PoolqWorker`, which puts itself in its ``ctx``
(``ctx["arq_worker"]``, what ``on_startup`` and the reaper read): no class swap, no stack
inspection. None of these behaviours has a public hook in arq (its hooks are ``on_startup``,
``on_shutdown``, ``on_job_start``, ``on_job_end``, ``after_job_end`` and the serializers; none
sees a poll, the choice of which job ids to start, or a job failed before it ran), and a queue
per lane (``_queue_name``) would order lanes but not admit by capacity nor ride out Redis
errors, so they stay overrides of the private methods above.

Under ``arq poolq.worker.app.WorkerSettings`` (documented to run the same worker) arq's CLI
constructs ``arq.worker.Worker`` itself, with no way to name another class, and ``on_startup``
receives only ``ctx``: only there :func:`adopt_running` finds the worker (the ``main()`` task
awaiting ``on_startup``) and swaps its class to :class:`PoolqWorker`.
``tests/test_arq_overrides.py`` fails when arq's internals that these rely on change.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from typing import Any, cast

from arq.constants import in_progress_key_prefix, job_key_prefix
from arq.jobs import deserialize_job
from arq.utils import timestamp_ms
from arq.worker import Worker
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError, WatchError
from redis.exceptions import TimeoutError as RedisTimeoutError

from poolq.worker.engine.lanes import Lane, lane_of_priority
from poolq.worker.runtime.admission import Admission

log = logging.getLogger("poolq.worker")

# arq minor versions these overrides were tested on (pyproject pins the same range)
ARQ_TESTED = ((0, 26), (0, 28))
OVERRIDDEN = ("_poll_iteration", "run_job", "start_jobs", "finish_failed_job")
# plain (not coroutine) methods: arq's signal handlers
SIGNAL_OVERRIDES = ("handle_sig_wait_for_completion",)

KEEP_MARK_EVERY_S = 1.0
# start a job (PoolqWorker._start_one): not running anywhere (KEYS[1], its in-progress mark),
# still queued (KEYS[2]) and due (score <= ARGV[2], now in ms): mark it in progress for ARGV[3]
# ms and answer its score and the size of its record (KEYS[3]); else nil
_CLAIM = (
    "if redis.call('exists', KEYS[1]) == 1 then return false end "
    "local score = redis.call('zscore', KEYS[2], ARGV[1]) "
    "if not score or tonumber(score) > tonumber(ARGV[2]) then return false end "
    "redis.call('psetex', KEYS[1], ARGV[3], '1') "
    "return {score, redis.call('strlen', KEYS[3])}"
)
_FULL = object()  # _start_one: max_jobs are running
LANES_REMEMBERED = 4096  # job ids whose lane was read (_lane_of)
_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, WatchError, ConnectionError, OSError)


class PoolqWorker(Worker):
    failed_unrun: list[Callable[[bytes | None], None]]
    draining_since: signal.Signals | None = None  # the first stop signal, once one came
    admission: Admission | None = None  # set at start-up (the worker's Runtime has it)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failed_unrun = []
        self.ctx["arq_worker"] = self  # on_startup(ctx) and the reaper find it here

    def running_jobs(self) -> int:
        return sum(not t.done() for t in self.tasks.values())

    def handle_sig_wait_for_completion(self, signum: signal.Signals) -> None:
        sig = signal.Signals(signum)
        if self.draining_since is None:
            self.draining_since = sig
            n, grace = self.running_jobs(), self._job_completion_wait
            log.warning(
                "%s: draining: %d job%s running, %ds grace to finish before %s back to the "
                "queue; no new jobs taken%s",
                sig.name,
                n,
                "" if n == 1 else "s",
                grace,
                "it goes" if n == 1 else "they go",
                "; Ctrl-C again to stop now" if n else "",
            )
            super().handle_sig_wait_for_completion(sig)
        elif sig == signal.SIGINT:
            n = self.running_jobs()
            log.warning(
                "SIGINT again: stopping now; %d running job%s back to the queue for another worker",
                n,
                " goes" if n == 1 else "s go",
            )
            self.handle_sig(sig)
        else:
            log.warning(
                "%s: already draining (%d jobs running); Ctrl-C (SIGINT) stops at once",
                sig.name,
                self.running_jobs(),
            )

    async def _poll_iteration(self) -> None:
        try:
            await super()._poll_iteration()
        except _REDIS_DOWN as e:
            log.warning("redis unavailable while polling (%s); retrying", e)
            await asyncio.sleep(0.5)

    async def run_job(self, job_id: str, score: int) -> None:
        try:
            await super().run_job(job_id, score)
        except _REDIS_DOWN as e:
            log.warning("job %s: redis failed around it (%s); handing it back", job_id, e)
            for _ in range(120):
                try:
                    await self.pool.delete(in_progress_key_prefix + job_id)
                    return
                except _REDIS_DOWN:
                    await asyncio.sleep(1.0)

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        for raw in job_ids:
            job_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            before = self.tasks.get(job_id)
            if before is not None and not before.done():
                await self._keep_mark(job_id)  # running here: never a second local run
                continue
            payload_bytes = None
            if self.admission is not None and not self.admission.room(Lane.BULK):
                lane, payload_bytes = await self._lane_of(job_id)
                if not self.admission.room(lane):
                    # only a bulk job can find no room (admission.py), and the ids come in
                    # score order, interactive first: every id after this one is bulk too
                    return
            claimed = await self._start_one(job_id)
            if claimed is _FULL:
                return
            if self.admission is not None and isinstance(claimed, int):
                self.admission.taken(job_id, payload_bytes or claimed)

    async def _start_one(self, job_id: str) -> int | object | None:
        """arq's ``start_jobs`` for one id, its WATCH / EXISTS / ZSCORE / MULTI-PSETEX-EXEC
        (four round trips) and the record's STRLEN made one script (:data:`_CLAIM`, atomic as
        the transaction was): the record's size once the job is started, None when another
        worker has it, it left the queue or it is deferred, :data:`_FULL` when ``max_jobs``
        run. arq's semaphore, counter, tasks and completion callback as ``start_jobs`` keeps
        them (``tests/test_arq_overrides.py`` pins that method's source)."""
        await self.sem.acquire()
        if self.job_counter >= self.max_jobs:
            self.sem.release()
            return _FULL
        self.job_counter += 1
        pool: Any = self.pool  # redis-py types eval's reply as str
        try:
            claimed = await pool.eval(
                _CLAIM,
                3,
                in_progress_key_prefix + job_id,
                self.queue_name,
                job_key_prefix + job_id,
                job_id,
                timestamp_ms(),
                int(self.in_progress_timeout_s * 1000),
            )
        except ResponseError as e:  # refused (OOM, read-only): arq skips the job on these too
            log.debug("job %s not started: redis answered %s", job_id, e)
            claimed = None
        except BaseException:
            self.job_counter -= 1
            self.sem.release()
            raise
        if not claimed:
            self.job_counter -= 1
            self.sem.release()
            return None
        score, size = claimed
        task = self.loop.create_task(self.run_job(job_id, int(float(score))))
        task.add_done_callback(lambda _: self._release_sem_dec_counter_on_complete())
        self.tasks[job_id] = task
        return int(size)

    async def _lane_of(self, job_id: str) -> tuple[Lane, int]:
        """A job's lane, read from its record: the ``priority`` it was enqueued with, the same
        field that places its chunks in the engines (``jobs/ingest.py``); and the record's
        size. A record that is gone or unreadable is bulk (arq then deals with it). A record
        never changes while its job id is queued: each is read once, not at every poll that
        finds no room (20 a second, each reading the whole record)."""
        known: dict[str, tuple[Lane, int]] = self.__dict__.setdefault("_lanes_read", {})
        if (hit := known.get(job_id)) is not None:
            return hit
        record = await self.pool.get(job_key_prefix + job_id)
        if record is None:
            return Lane.BULK, 0
        try:
            job = deserialize_job(record, deserializer=self.job_deserializer)
            found = lane_of_priority(job.kwargs.get("priority")), len(record)
        except Exception:  # arq reports the record when it runs the job
            found = Lane.BULK, len(record)
        if len(known) >= LANES_REMEMBERED:
            known.clear()
        known[job_id] = found
        return found

    async def _keep_mark(self, job_id: str) -> None:
        # seen again by every poll (20 a second) while it runs: one SET a second per job is
        # enough to put back a mark that something dropped (a Redis restart, a reaper)
        kept: dict[str, float] = self.__dict__.setdefault("_marks_kept", {})
        now = time.monotonic()
        if now - kept.get(job_id, -KEEP_MARK_EVERY_S) < KEEP_MARK_EVERY_S:
            return
        kept[job_id] = now
        if len(kept) > 4 * max(1, len(self.tasks)):  # forget finished jobs
            for j in [j for j in kept if j not in self.tasks]:
                del kept[j]
        await self.pool.set(
            in_progress_key_prefix + job_id,
            b"1",
            px=int(self.in_progress_timeout_s * 1000),
            nx=True,
        )

    async def finish_failed_job(self, job_id: str, result_data: bytes | None) -> None:
        for listener in self.failed_unrun:
            listener(result_data)
        await super().finish_failed_job(job_id, result_data)


def adopt(worker: Worker) -> PoolqWorker:
    """``worker`` as a :class:`PoolqWorker` (it adds methods, and one list of listeners)."""
    if not isinstance(worker, PoolqWorker):
        if type(worker) is not Worker:
            raise TypeError(f"expected arq's Worker or a PoolqWorker, got {type(worker).__name__}")
        worker.__class__ = PoolqWorker
    adopted = cast(PoolqWorker, worker)  # its class is PoolqWorker now
    if not hasattr(adopted, "failed_unrun"):
        adopted.failed_unrun = []
    return adopted


def running_worker() -> Worker | None:
    """The arq worker whose ``main()`` is awaiting us (from ``on_startup``), if any: arq runs
    ``Worker.main`` as a task and awaits ``on_startup(ctx)`` inside it."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop
        return None
    coro: Any = task.get_coro() if task is not None else None
    frame = getattr(coro, "cr_frame", None)
    worker = frame.f_locals.get("self") if frame is not None else None
    return worker if isinstance(worker, Worker) else None


def adopt_running(ctx: dict[str, Any]) -> PoolqWorker | None:
    """In ``on_startup``: make the running arq worker a :class:`PoolqWorker` and put it in
    ``ctx["arq_worker"]`` (for the reaper and metrics). None outside an arq worker."""
    worker = ctx.get("arq_worker") or running_worker()
    if worker is None:
        log.warning("on_startup outside an arq worker: Redis-error tolerance and job metrics off")
        return None
    ctx["arq_worker"] = adopt(worker)
    return ctx["arq_worker"]
