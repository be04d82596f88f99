"""Writes in flight to a store that takes several at once (a server, ``write_concurrency``):
writes of different documents overlap up to the bound, a document's writes never overlap and
land in the order they were queued, and every other call waits for the writes before it and
runs alone (``sinks/owner.py``)."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np

from poolq.sinks.points import PointRecord, point_id
from poolq.sinks.writer import QdrantWriter


class SlowStore:
    """A store that takes ``write_concurrency`` upserts at once, each ``delay_s`` long, and
    records what overlapped."""

    concurrent_reads = False

    def __init__(self, write_concurrency: int, delay_s: float = 0.05) -> None:
        self.write_concurrency = write_concurrency
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.active: list[str] = []  # what runs now: "upsert:<doc>" / "delete"
        self.max_active = 0
        self.log: list[tuple[str, str, float]] = []  # (start|end, what, time)
        self.overlaps: list[tuple[str, list[str]]] = []
        self.slow: dict[str, float] = {}  # the next upsert of these takes this long

    def _enter(self, what: str) -> None:
        with self.lock:
            self.overlaps.append((what, list(self.active)))
            self.active.append(what)
            self.max_active = max(self.max_active, len(self.active))
            self.log.append(("start", what, time.monotonic()))

    def _leave(self, what: str) -> None:
        with self.lock:
            self.active.remove(what)
            self.log.append(("end", what, time.monotonic()))

    def upsert_records(self, collection, records):
        what = "upsert:" + ",".join(sorted({r.payload["doc_id"] for r in records}))
        self._enter(what)
        time.sleep(self.slow.pop(what, self.delay_s))
        self._leave(what)

    def retrieve(self, collection, ids, **kw):
        return []

    def delete(self, collection, selector):
        self._enter("delete")
        time.sleep(self.delay_s)
        self._leave("delete")

    def maintain(self):
        pass

    def close(self):
        pass


def points(doc: str, n: int = 2, tag: int = 0) -> list[PointRecord]:
    return [
        PointRecord(point_id(doc, i), {"v": np.full(4, tag, np.float32)}, {"doc_id": doc})
        for i in range(n)
    ]


async def test_different_documents_overlap_up_to_the_bound():
    store = SlowStore(write_concurrency=4)
    async with QdrantWriter(store_factory=lambda: store) as w:
        await asyncio.gather(*(w.write("c", points(f"d{i}")) for i in range(12)))
    assert store.max_active == 4  # the bound, reached


async def test_one_at_a_time_when_the_store_takes_one():
    store = SlowStore(write_concurrency=1, delay_s=0.01)
    async with QdrantWriter(store_factory=lambda: store) as w:
        await asyncio.gather(*(w.write("c", points(f"d{i}")) for i in range(6)))
    assert store.max_active == 1


async def test_a_documents_writes_never_overlap_and_keep_their_order():
    store = SlowStore(write_concurrency=4, delay_s=0.01)
    store.slow["upsert:same"] = 0.4  # its first write is slow: the next must wait for it
    async with QdrantWriter(store_factory=lambda: store) as w:
        calls = []
        for round_ in range(3):  # doc "same" written three times, others between
            calls.append(w.write("c", points("same", tag=round_)))
            calls += [w.write("c", points(f"other{round_}-{i}")) for i in range(3)]
        await asyncio.gather(*calls)
    same = [(what, active) for what, active in store.overlaps if what == "upsert:same"]
    assert len(same) == 3
    assert all("upsert:same" not in active for _, active in same)
    assert store.max_active > 1  # the others did overlap


async def test_other_calls_wait_for_the_writes_before_them_and_run_alone():
    store = SlowStore(write_concurrency=4)
    async with QdrantWriter(store_factory=lambda: store) as w:
        writes = [asyncio.ensure_future(w.write("c", points(f"d{i}"))) for i in range(3)]
        await asyncio.sleep(0)  # queued first
        delete = asyncio.ensure_future(w.delete_points("c", [point_id("d0", 0)]))
        after = asyncio.ensure_future(w.write("c", points("late")))
        await asyncio.gather(*writes, delete, after)
    (deleting,) = [active for what, active in store.overlaps if what == "delete"]
    assert deleting == []  # alone
    starts = {what: t for kind, what, t in store.log if kind == "start"}
    ends = {what: t for kind, what, t in store.log if kind == "end"}
    assert all(ends[f"upsert:d{i}"] <= starts["delete"] for i in range(3))
    assert ends["delete"] <= starts["upsert:late"]


async def test_one_writes_batches_land_in_order_one_at_a_time():
    """A document's chunks go in order (a stored last chunk means a whole document:
    ``sinks/inventory.py``), so the batches of one write never overlap, even on a store that
    takes several writes at once."""
    store = SlowStore(write_concurrency=4, delay_s=0.01)
    async with QdrantWriter(store_factory=lambda: store, batch_points=2) as w:
        assert await w.write("c", points("big", n=7)) == 7
    assert store.max_active == 1
    assert [what for kind, what, _ in store.log if kind == "start"] == ["upsert:big"] * 4
