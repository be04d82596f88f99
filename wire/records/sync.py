"""Where a sync of a collection with a bucket's prefix got to, checkpointed in Redis under
``SOURCE_SYNC_KEY`` after each listing page it finished (``worker/app/jobs/reindex_objects.py``
writes and reads it).

``after``: the URI of the last object of the last finished page (None: nothing yet); the counts
so far; ``target``: the collection written (a full rebuild's new one). A checkpoint is resumed
only by a sync of the same source, collection and kind (``matches``)."""

from __future__ import annotations

from dataclasses import dataclass

from poolq.wire.records.record import WireRecord


@dataclass(frozen=True, kw_only=True)
class SyncCheckpoint(WireRecord):
    wire_name = "sync checkpoint"

    source: str
    collection: str
    full: bool
    target: str
    after: str | None = None
    listed: int = 0
    fetched: int = 0
    parsed: int = 0
    pages: int = 0
    new: int = 0
    changed: int = 0
    stale: int = 0
    metadata_only: int = 0
    unchanged: int = 0
    removed: int = 0
    encoded_chunks: int = 0
    points: int = 0
    errors: int = 0
    parked: str | None = None  # why the sync last parked (the store's error), if it did

    def matches(self, source: str, collection: str, full: bool) -> bool:
        return (self.source, self.collection, self.full) == (source, collection, full)
