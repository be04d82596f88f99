"""Scheduled reindexing: ``[[reindex]]`` entries of the worker config, run as arq cron jobs.

    [[reindex]]
    source = "/data/docs"        # a JSONL file, a folder, or a bucket's prefix (s3://b/docs/)
    collection = "docs"
    cron = "0 3 * * *"           # minute hour day month weekday; 6 fields: seconds first
    full = false                 # true: rebuild into a new collection, then switch the alias
    keep_old = false

Cron fields take ``*``, numbers, lists ``1,15``, ranges ``1-5`` and steps ``*/10`` or
``0-30/5``; weekday 0 or 7 is Sunday. Times are the worker's local time. Each entry is a
*unique* arq cron job, so when several workers run, each scheduled time runs once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from arq.cron import CronJob, cron

from poolq.worker.config.tables import checked_table

# (arq keyword, lowest, highest) for each cron field, in cron order after the optional seconds
_FIELDS = [("minute", 0, 59), ("hour", 0, 23), ("day", 1, 31), ("month", 1, 12), ("weekday", 0, 7)]
_SECOND = ("second", 0, 59)


@dataclass(frozen=True)
class ReindexSchedule:
    source: str
    collection: str
    cron: str
    full: bool = False
    keep_old: bool = False

    def __post_init__(self) -> None:
        for name in ("source", "collection", "cron"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"[[reindex]] {name}: expected a non-empty string, got {value!r}")
        for name in ("full", "keep_old"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"[[reindex]] {name}: expected true or false")
        parse_cron(self.cron)

    @classmethod
    def from_dict(cls, data: Any) -> ReindexSchedule:
        data = checked_table(
            "[[reindex]]", data, ("source", "collection", "cron", "full", "keep_old")
        )
        missing = {"source", "collection", "cron"} - set(data)
        if missing:
            raise ValueError(f"[[reindex]]: missing {sorted(missing)}")
        return cls(**data)


def parse_cron(expr: str) -> dict[str, set[int] | None]:
    """arq ``cron()`` keyword arguments for a 5-field (or 6-field, seconds first) expression;
    ``*`` fields are left out (None), except seconds, which default to 0."""
    parts = expr.split()
    if len(parts) not in (5, 6):
        raise ValueError(
            f"cron {expr!r}: expected 5 fields (minute hour day month weekday) or 6 (seconds "
            f"first), got {len(parts)}"
        )
    specs = ([_SECOND] if len(parts) == 6 else []) + _FIELDS
    out: dict[str, set[int] | None] = {"second": {0}}
    for part, (name, low, high) in zip(parts, specs, strict=True):
        values = _field(part, low, high, expr, name)
        if name == "weekday" and values is not None:  # cron: 0/7 = Sunday; arq: 0 = Monday
            values = {(v - 1) % 7 for v in values}
        out[name] = values
    return out


def _field(part: str, low: int, high: int, expr: str, name: str) -> set[int] | None:
    if part == "*":
        return None
    values: set[int] = set()
    for item in part.split(","):
        step = 1
        if "/" in item:
            item, step_s = item.split("/", 1)
            step = _int(step_s, expr, name)
            if step < 1:
                raise ValueError(f"cron {expr!r}: {name} step must be >= 1, got {step}")
        if item == "*":
            start, stop = low, high
        elif "-" in item:
            a, b = item.split("-", 1)
            start, stop = _int(a, expr, name), _int(b, expr, name)
        else:
            start = stop = _int(item, expr, name)
        if not low <= start <= stop <= high:
            raise ValueError(f"cron {expr!r}: {name} {item!r} outside {low}-{high}")
        values.update(range(start, stop + 1, step))
    return values


def _int(s: str, expr: str, name: str) -> int:
    try:
        return int(s)
    except ValueError:
        raise ValueError(f"cron {expr!r}: {name}: expected a number, got {s!r}") from None


def cron_jobs(
    schedules: tuple[ReindexSchedule, ...],
    run: Callable[..., Awaitable[Any]],
    timeout_s: int,
    keep_result_s: int = 24 * 3600,
) -> list[CronJob]:
    """One unique arq cron job per schedule, each calling ``run(ctx, source, collection, full,
    keep_old)``; results are kept (arq's cron default keeps none) so runs can be inspected
    under their ids ``reindex:COLLECTION:I:<unix ms>``."""
    jobs = []
    for i, s in enumerate(schedules):

        async def scheduled(ctx: dict[str, Any], s: ReindexSchedule = s) -> Any:
            return await run(ctx, s.source, s.collection, s.full, s.keep_old)

        name = f"reindex:{s.collection}:{i}"
        scheduled.__qualname__ = scheduled.__name__ = name
        fields = {k: v for k, v in parse_cron(s.cron).items() if v is not None}
        jobs.append(
            cron(
                scheduled,
                name=name,
                unique=True,
                timeout=timeout_s,
                max_tries=1,
                keep_result=keep_result_s,
                **fields,  # type: ignore[arg-type]
            )
        )
    return jobs
