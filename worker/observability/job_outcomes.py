"""Job outcomes per function (``poolq_jobs_total``), as arq classifies them.

arq bumps exactly one of its ``jobs_complete/jobs_failed/jobs_retried`` counters for a job that
ran, then awaits its public ``on_job_end`` hook with no await in between: the hook reads which
of ``jobs_complete``/``jobs_retried`` moved since the last job end (neither: failed). The
function name comes from a thin wrapper (:func:`labelled`) put around each job coroutine where its
``arq.worker.func`` / ``cron`` is built, before the worker is (``job_guard.guarded_function``;
the cron reindex entries ``reindex:COLL:I``, labelled ``reindex``, in ``worker_settings.py``):
it records the name in the job's ctx. arq's ``Function`` objects are never changed afterwards. Jobs arq fails without
running them (expired, max tries exceeded, unknown function) never reach ``on_job_end``: they
arrive through :attr:`PoolqWorker.failed_unrun` (``worker/reliability/arq_overrides.py``, the one
module that overrides arq's private methods), with arq's serialized result naming the function.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any

from poolq.wire import constants

if TYPE_CHECKING:
    from arq.typing import WorkerCoroutine

    from poolq.worker.reliability.arq_overrides import PoolqWorker

JOB_OUTCOMES = ("done", "failed", "retried")
FUNCTION_KEY = "_poolq_metrics_function"  # set in a job's ctx by the wrapper
UNKNOWN = "unknown"


class JobOutcomes:
    """Counts of ``(function, outcome)``; written on the event loop, read by the scrape thread."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {
            (f, o): 0 for f in (constants.INGEST_JOB, constants.REINDEX_JOB) for o in JOB_OUTCOMES
        }
        self._lock = threading.Lock()
        self._arq_seen = (0, 0)  # arq's jobs_complete, jobs_retried at the last job end

    def job_ended(self, function: str, outcome: str) -> None:
        with self._lock:
            self._counts[(function, outcome)] = self._counts.get((function, outcome), 0) + 1

    def snapshot(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self._counts)

    def __getitem__(self, key: tuple[str, str]) -> int:
        with self._lock:
            return self._counts.get(key, 0)

    def arq_job_ended(self, jobs_complete: int, jobs_retried: int, function: str) -> str:
        """Count the job that just ended from arq's counters as they stand now; its outcome."""
        seen = (jobs_complete, jobs_retried)
        done, retried = (a - b for a, b in zip(seen, self._arq_seen, strict=True))
        self._arq_seen = seen
        outcome = "done" if done else "retried" if retried else "failed"
        self.job_ended(function, outcome)
        return outcome

    def hook_arq(self, worker: PoolqWorker) -> None:
        """Count ``worker``'s job outcomes per function, through its public ``on_job_end`` hook
        (chained with any hook already set) and its ``failed_unrun`` listeners. Jobs whose
        coroutine was not :func:`labelled` count as ``unknown``."""
        self._arq_seen = (worker.jobs_complete, worker.jobs_retried)
        prev_end = worker.on_job_end

        async def on_job_end(ctx: dict[str, Any]) -> None:
            # read arq's counters before awaiting anything (another job may end meanwhile)
            function = str(ctx.get(FUNCTION_KEY, UNKNOWN))
            self.arq_job_ended(worker.jobs_complete, worker.jobs_retried, function)
            if prev_end is not None:
                await prev_end(ctx)

        worker.on_job_end = on_job_end
        deserializer = worker.job_deserializer
        worker.failed_unrun.append(
            lambda data: self.job_ended(function_of(data, deserializer), "failed")
        )


def labelled(coroutine: WorkerCoroutine, label: str) -> WorkerCoroutine:
    """``coroutine``, recording ``label`` in the job's ctx before it runs: wrap a job
    coroutine with it before passing it to ``arq.worker.func`` or ``arq.cron.cron``."""

    @functools.wraps(coroutine)
    async def run(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        ctx[FUNCTION_KEY] = label
        return await coroutine(ctx, *args, **kwargs)

    return run


def function_of(result_data: bytes | None, deserializer: Any) -> str:
    """The function named in arq's serialized result of a job failed before it ran."""
    if not result_data:
        return UNKNOWN
    try:
        from arq.jobs import deserialize_result

        name = str(deserialize_result(result_data, deserializer=deserializer).function)
    except Exception:
        return UNKNOWN
    return name.split(":", 1)[0] if name and not name.startswith("<") else UNKNOWN
