"""The exactness check of ``soak.py``: the collection read back from the store's folder after a
run (every document, its chunk indices and chunk_count) against the chunk counts computed before
it, so that a lost or duplicated chunk shows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from poolq.sinks.store.edge import EdgeStore
from poolq.wire import payload as fields

COLLECTION = "soak"


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
