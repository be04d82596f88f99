"""Checking a collection's integrity: every document's chunks exactly once, without gaps.

A point's id derives from ``(doc_id, chunk_index)`` and its payload records ``chunk_count``, so
a collection is *exact* when, for every document, the chunk indices present are exactly
``0..chunk_count-1`` and no point disagrees about the count. Used after crashes and restarts
(the reliability and integration tests, ``benchmarks/newcomer_run.py``) to show that nothing was
lost or duplicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from poolq.sinks.store.interface import Store
from poolq.wire.payload import CHUNK_COUNT, CHUNK_INDEX, DOC_ID


@dataclass
class CollectionAudit:
    points: int = 0
    chunks: dict[str, list[int]] = field(default_factory=dict)  # doc id -> indices present
    counts: dict[str, set[int]] = field(default_factory=dict)  # doc id -> chunk_count values

    @property
    def documents(self) -> set[str]:
        return set(self.chunks)

    def problems(self) -> list[str]:
        """Human-readable defects; empty when the collection is exact."""
        out = []
        for doc_id, indices in sorted(self.chunks.items()):
            counts = self.counts[doc_id]
            if len(counts) != 1:
                out.append(f"{doc_id!r}: points disagree on chunk_count {sorted(counts)}")
                continue
            (n,) = counts
            if sorted(indices) != list(range(n)):
                dupes = sorted({i for i in indices if indices.count(i) > 1})
                missing = sorted(set(range(n)) - set(indices))
                extra = sorted(i for i in set(indices) if i >= n)
                out.append(
                    f"{doc_id!r}: chunk_count {n}, missing {missing}, duplicated {dupes}, "
                    f"beyond the count {extra}"
                )
        return out

    @property
    def expected_points(self) -> int:
        return sum(max(c) for c in self.counts.values())


def audit_collection(store: Store, collection: str, page_size: int = 1024) -> CollectionAudit:
    audit = CollectionAudit()
    offset = None
    while True:
        points, offset = store.scroll(
            collection,
            limit=page_size,
            offset=offset,
            with_payload=[DOC_ID, CHUNK_INDEX, CHUNK_COUNT],
            with_vectors=False,
        )
        for p in points:
            pl = p.payload or {}
            doc_id = str(pl.get(DOC_ID))
            audit.chunks.setdefault(doc_id, []).append(int(pl.get(CHUNK_INDEX, -1)))
            audit.counts.setdefault(doc_id, set()).add(int(pl.get(CHUNK_COUNT, 0)))
        audit.points += len(points)
        if offset is None:
            return audit
