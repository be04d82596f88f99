"""The one subclass of arq's ``Worker`` (arq is in maintenance mode): :class:`PoolqWorker`,
which ``poolq worker`` constructs (``worker/app/worker_settings.py``, ``parse_worker.py``).

arq's public hooks are ``on_startup``, ``on_shutdown``, ``on_job_start``, ``on_job_end``,
``after_job_end``, the serializers and the constructor arguments; none sees a poll, the choice of
which job ids to start, or a job failed before it ran. What needs those overrides these methods
(``tests/test_arq_overrides.py`` pins arq's signature and behaviour under each one):

* ``_poll_iteration`` (private; the one entry of :data:`PRIVATE_ALLOWED`), Redis outages: a
  Redis error inside one poll (a WATCH-ed check cannot be retried by the client) would end
  ``Worker.main()`` and the process; here it is logged and the next poll tries again;
* ``run_job``, Redis outages: a job whose bookkeeping failed on Redis before or after it ran is
  handed back to the queue (its in-progress mark dropped once Redis answers) instead of waiting
  out arq's job timeout; re-running it rewrites the same points;
* ``start_jobs``, lanes and admission: of the job ids one poll read (in score order:
  interactive jobs first; a job's lane is read from its score, its size from ``STRLEN``: no
  record is read), a bulk job is started only while the worker's engines have room
  (``runtime/admission.py``), a retried interactive job only once its backoff is over
  (``wire/placement.py``: its score keeps it ahead of bulk jobs, not its due time), and a job
  running in this worker is never started a second time here (its mark, if something dropped
  it, is set back). Each admitted id is started by arq's own ``start_jobs([job_id])``;
* ``finish_failed_job``: jobs arq fails without running them (expired, max tries exceeded,
  unknown function) are passed to :attr:`PoolqWorker.failed_unrun` listeners (the job index
  and metrics count them as failed); no hook of arq's sees them;
* ``handle_sig_wait_for_completion`` (SIGTERM / Ctrl-C with a grace period): logs at once that
  the worker is draining; a second Ctrl-C stops at once through arq's ``handle_sig``.

A queue per lane (``_queue_name``) would order lanes but neither admit by capacity nor ride out
Redis errors. ``arq poolq.worker.app.WorkerSettings`` (arq's CLI) constructs ``arq.worker.Worker``
itself, with no public way to name another class: start-up refuses it (:func:`poolq_worker`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from typing import Any

from arq.constants import in_progress_key_prefix, job_key_prefix
from arq.utils import timestamp_ms
from arq.worker import Worker
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.exceptions import WatchError

from poolq.wire.placement import due_ms, priority_of_score
from poolq.worker.engine.batching.lanes import lane_of_priority
from poolq.worker.runtime.admission import Admission

log = logging.getLogger("poolq.worker")

# arq minor versions these overrides were tested on (pyproject pins the same range)
ARQ_TESTED = ((0, 26), (0, 28))
OVERRIDDEN = ("_poll_iteration", "run_job", "start_jobs", "finish_failed_job")
# plain (not coroutine) methods: arq's signal handlers
SIGNAL_OVERRIDES = ("handle_sig_wait_for_completion",)
# The one allow-list of arq / redis-py private names production code may use (checked by
# tests/architecture/test_private_names.py): name -> the contract test that covers it.
PRIVATE_ALLOWED = {
    "_poll_iteration": "tests/test_arq_overrides.py::"
    "test_each_overridden_method_still_exists_with_the_same_signature",
}

KEEP_MARK_EVERY_S = 1.0
REMEMBERED = 4096  # resting job ids whose due time is kept
_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, WatchError, ConnectionError, OSError)
RUN_POOLQ_WORKER = (
    "poolq's worker must be started with `poolq worker` (arq's own CLI builds arq's Worker, "
    "without the lanes, admission and Redis-outage handling poolq needs)"
)


class NotAPoolqWorkerError(RuntimeError):
    pass


class PoolqWorker(Worker):
    def __init__(self, *args: Any, job_completion_wait: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, job_completion_wait=job_completion_wait, **kwargs)
        self.grace_s = job_completion_wait  # how long running jobs may finish once draining
        self.failed_unrun: list[Callable[[bytes | None], None]] = []
        self.draining_since: signal.Signals | None = None  # the first stop signal, once one came
        self.admission: Admission | None = None  # set at start-up (the worker's Runtime has it)
        self.resting: dict[str, int] = {}  # job id -> due time (ms) of a job not due yet
        self.marks_kept: dict[str, float] = {}  # job id -> when its mark was last set back
        self.ctx["arq_worker"] = self  # on_startup(ctx) and the reaper find it here

    def running_jobs(self) -> int:
        return sum(not t.done() for t in self.tasks.values())

    def handle_sig_wait_for_completion(self, signum: signal.Signals) -> None:
        sig = signal.Signals(signum)
        if self.draining_since is None:
            self.draining_since = sig
            n = self.running_jobs()
            log.warning(
                "%s: draining: %d job%s running, %ds grace to finish before %s back to the "
                "queue; no new jobs taken%s",
                sig.name,
                n,
                "" if n == 1 else "s",
                self.grace_s,
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
        now = timestamp_ms()
        for raw in job_ids:
            job_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            before = self.tasks.get(job_id)
            if before is not None and not before.done():
                await self.keep_mark(job_id)  # running here: never a second local run
                continue
            if self.resting.get(job_id, 0) > now:
                continue  # a retried interactive job waiting out its backoff
            if self.job_counter >= self.max_jobs:
                return
            async with self.pool.pipeline(transaction=False) as pipe:
                pipe.zscore(self.queue_name, job_id)
                pipe.strlen(job_key_prefix + job_id)  # its size, for admission: never read
                score, size = await pipe.execute()
            if score is None:
                continue  # taken and finished elsewhere
            lane = lane_of_priority(priority_of_score(score, now))  # (wire/placement.py)
            if self.admission is not None and not self.admission.room(lane):
                # only a bulk job can find no room (admission.py), and the ids come in score
                # order, interactive first: every id after this one is bulk too
                return
            if (due := due_ms(score, now)) > now:
                if len(self.resting) >= REMEMBERED:
                    self.resting.clear()
                self.resting[job_id] = due
                continue
            await super().start_jobs([job_id.encode()])  # arq's claim (WATCH/MULTI) and task
            started = self.tasks.get(job_id) not in (None, before)
            if self.admission is not None and started:
                self.admission.taken(job_id, int(size))

    async def keep_mark(self, job_id: str) -> None:
        # seen again by every poll (20 a second) while it runs: one SET a second per job is
        # enough to put back a mark that something dropped (a Redis restart, a reaper)
        now = time.monotonic()
        if now - self.marks_kept.get(job_id, -KEEP_MARK_EVERY_S) < KEEP_MARK_EVERY_S:
            return
        self.marks_kept[job_id] = now
        if len(self.marks_kept) > 4 * max(1, len(self.tasks)):  # forget finished jobs
            for j in [j for j in self.marks_kept if j not in self.tasks]:
                del self.marks_kept[j]
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


def poolq_worker(ctx: dict[str, Any]) -> PoolqWorker:
    """The :class:`PoolqWorker` running ``on_startup(ctx)`` (it put itself in ``ctx``);
    :class:`NotAPoolqWorkerError` (one line: run ``poolq worker``) under arq's own CLI."""
    worker = ctx.get("arq_worker")
    if not isinstance(worker, PoolqWorker):
        raise NotAPoolqWorkerError(RUN_POOLQ_WORKER)
    return worker
