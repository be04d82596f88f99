"""The dashboard's time series: a small ring per metric in Redis, written by the workers and
read by ``ingest/dashboard/``.

Each metric is one hash (``SERIES_KEY``) of ``SERIES_SLOTS`` slots of ``SERIES_STEP_S``
seconds (an hour): slot ``n`` holds ``t{n}`` (the step it belongs to: unix seconds //
``SERIES_STEP_S``) and ``v{n}`` (its value). A write to a slot whose step has passed starts it
again from zero, so the hash never holds more than ``2 * SERIES_SLOTS`` fields and a reader
keeps only the slots of the last hour. Counters (documents, chunks, jobs done and failed) are
added up across workers within a step; gauges (the queue's depth) are overwritten. Every
worker's heartbeat thread writes every metric in one script call every ``SERIES_STEP_S``
(``worker/observability/series.py``): one command per worker per step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from poolq.wire import constants

COUNTERS: Final = ("documents", "chunks", "done", "failed")
GAUGES: Final = ("depth",)
METRICS: Final = (*GAUGES, *COUNTERS)

# KEYS: one hash per metric; ARGV: step, slots, ttl, then a kind (add|set) and a value per key
WRITE_SCRIPT: Final = """
local step, slots, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local slot = tonumber(step) % slots
for i, key in ipairs(KEYS) do
  local kind, value = ARGV[2 + 2 * i], ARGV[3 + 2 * i]
  if redis.call('HGET', key, 't' .. slot) ~= step then
    redis.call('HSET', key, 't' .. slot, step, 'v' .. slot, 0)
  end
  if kind == 'add' then
    redis.call('HINCRBY', key, 'v' .. slot, value)
  else
    redis.call('HSET', key, 'v' .. slot, value)
  end
  redis.call('EXPIRE', key, ttl)
end
return slot
"""


def series_key(metric: str) -> str:
    return constants.SERIES_KEY.format(metric=metric)


def script_args(values: Mapping[str, int], now: float) -> tuple[list[str], list[Any]]:
    """The keys and arguments of :data:`WRITE_SCRIPT` for ``values`` (metric -> a counter's
    increase since the last write, or a gauge's value now)."""
    step = int(now // constants.SERIES_STEP_S)
    keys, argv = (
        [],
        [str(step), constants.SERIES_SLOTS, constants.SERIES_SLOTS * constants.SERIES_STEP_S],
    )
    for metric, value in values.items():
        keys.append(series_key(metric))
        argv += ["add" if metric in COUNTERS else "set", int(value)]
    return keys, argv


def read_ring(raw: Mapping[Any, Any], now: float) -> list[tuple[float, int]]:
    """A metric's hash (``HGETALL``) as ``(unix seconds, value)`` of the last hour, oldest
    first; slots of an older step are left out."""
    fields = {(k.decode() if isinstance(k, bytes) else str(k)): v for k, v in raw.items()}
    newest = int(now // constants.SERIES_STEP_S)
    out = []
    for name, t in fields.items():
        if not name.startswith("t"):
            continue
        try:
            step, value = int(t), int(fields.get("v" + name[1:], 0))
        except (TypeError, ValueError):
            continue
        if newest - constants.SERIES_SLOTS < step <= newest:
            out.append((float(step * constants.SERIES_STEP_S), value))
    return sorted(out)
