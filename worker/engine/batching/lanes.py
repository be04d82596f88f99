"""Who runs next: the one place that orders work, in the engines' queues and on the CPU compute
thread alike.

Every request carries a :class:`Lane`. Lower lanes run first, everywhere:

* ``QUERY``: a search's query text (``Vectorizer.encode_query``; the engine's query slot takes
  these at once, beside a running batch, ``model_thread.py``): a person is waiting;
* ``INTERACTIVE``: the chunks of a job enqueued with ``priority="interactive"`` (by default, an
  enqueue call that makes one job): a caller is waiting on a small job;
* ``BULK``: everything else (large enqueue calls, reindexing).

Within a lane, groups (a request's ``group``: its job) share the engine by tokens, with
start-time fair queuing: each request gets a start tag, ``max(lane's virtual time, the group's
last finish tag)``, and a finish tag ``start + tokens``; the queue is ordered by
``(lane, start tag, arrival)``; the lane's virtual time is the start tag of the last request
cut into a batch. A job that arrives behind a long backlog starts at the current virtual time,
so its first chunks join the next batch, and from then on every job with queued work gets an
equal share of tokens per round, however much it queued. A call that names no group is a
group of its own.

The same order decides who waits, and the rules are here, next to it; the other modules hold
only the mechanism (a heap, a condition, a priority queue) and call them:

* :func:`may_take_job`: which jobs a worker takes from Redis (``runtime/admission.py``);
* :func:`waits_for_room`: which callers wait for room in an engine's queue, and behind whom
  (``queue_room.py``);
* :func:`order_key`: the engines' queues (``scheduler.py``);
* :func:`compute_key` and :func:`preempts`: the CPU compute thread's queue, and which queued
  forward runs nested at a running one's safe points (``compute_thread.py``).

The Redis queue's order (which job a worker polls first) is the same lanes' first half: the
client and every re-entry into the queue (a retry, a DLQ retry, a reaper's hand-back) score a
job by ``wire/placement.py``, which the client imports without the worker.

Bounds, one name each: ``max_queued_tokens`` (the worker's admission bound, in tokens queued in
its engines: settings), ``queue_limit_tokens`` (one engine's hard cap, ``engine.py``),
``max_batch_tokens`` / ``MAX_BATCH_REQUESTS`` / ``QUERY_BATCH_TOKENS`` (a batch), and two that
bound what one group holds in flight, not who goes first: a reindex's ``BATCHES_IN_FLIGHT``
(documents chunked and held at once, ``reindex/plan.py``) and the search service's
``concurrency`` (searches read from the store at once, ``runtime/search_service.py``); their
query texts take the ``QUERY`` lane like any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class Lane(IntEnum):
    QUERY = 0
    INTERACTIVE = 1
    BULK = 2


def lane_of_priority(priority: str | None) -> Lane:
    """A job's ``priority`` argument (``constants.PRIORITIES``) as its lane; a job without one
    (a reindex) is bulk."""
    return Lane.INTERACTIVE if priority == "interactive" else Lane.BULK


OrderKey = tuple[int, float, int]


class FairShare:
    """Start and finish tags per lane and group (not thread-safe: the scheduler holds its lock
    around every call)."""

    def __init__(self) -> None:
        self._vtime: dict[Lane, float] = {}
        self._finish: dict[tuple[Lane, str], float] = {}

    def tag(self, lane: Lane, group: str, tokens: int) -> float:
        """The start tag of a request of ``tokens`` tokens (its group's finish tag moves on)."""
        now = self._vtime.get(lane, 0.0)
        start = max(now, self._finish.get((lane, group), 0.0))
        self._finish[(lane, group)] = start + max(tokens, 1)
        if len(self._finish) > 4096:  # forget groups that fell behind virtual time
            self._finish = {k: v for k, v in self._finish.items() if v > self._vtime.get(k[0], 0)}
        return start

    def served(self, lane: Lane, start_tag: float) -> None:
        """A request with this start tag was cut into a batch: the lane's virtual time."""
        if start_tag > self._vtime.get(lane, 0.0):
            self._vtime[lane] = start_tag


def may_take_job(lane: Lane, load_tokens: int, bound_tokens: int) -> bool:
    """Whether a worker takes a job of ``lane`` from Redis now, with ``load_tokens`` queued (or
    about to be) in its engines: an interactive job always (a caller waits; it queues ahead of
    bulk work anyway), a bulk job only below the bound (the rest stays in Redis, for any
    worker with room)."""
    return lane <= Lane.INTERACTIVE or load_tokens < bound_tokens


def waits_for_room(lane: Lane, waiting_lanes: Iterable[Lane]) -> bool | None:
    """Whether a caller of ``lane`` must wait for room in an engine's queue whatever the room:
    True behind a waiting caller of a more urgent lane; None: only if the tokens do not fit.
    Queries never wait (False)."""
    if lane == Lane.QUERY:
        return False
    if any(w < lane for w in waiting_lanes):
        return True
    return None


def order_key(lane: Lane, start_tag: float, arrival: int) -> OrderKey:
    """The queue order: lane, then start tag, then arrival."""
    return (int(lane), start_tag, arrival)


def compute_key(lane: Lane, arrival: int) -> tuple[int, int]:
    """The compute thread's order: lane, then arrival."""
    return (int(lane), arrival)


def preempts(queued: Lane, running: Lane) -> bool:
    """Whether queued work of lane ``queued`` runs at a safe point inside a forward of lane
    ``running``: only a more urgent lane does."""
    return queued < running
