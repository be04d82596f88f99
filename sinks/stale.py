"""Finding the chunks a re-ingested document no longer has.

Chunk ids are deterministic and contiguous, so one lookup by id of every document's first stale
chunk finds the documents that shrank: its ``chunk_count`` says how many chunks they had, hence
which ids to delete. No payload scan per document; a probe without a usable count falls back to
a filter on ``doc_id`` and ``chunk_index``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from qdrant_client import models

from poolq.sinks.points import point_id
from poolq.wire import payload as fields


def stale_probes(replace: Mapping[str, int]) -> dict[str, str]:
    """The id of each document's first chunk past its new count -> the document id."""
    return {point_id(doc_id, n): doc_id for doc_id, n in replace.items()}


def stale_ids(
    found: Sequence[models.Record], probes: Mapping[str, str], replace: Mapping[str, int]
) -> tuple[list[str], list[str]]:
    """From the probes that exist: the stale point ids, and the documents whose probe has no
    usable ``chunk_count`` (delete those by filter)."""
    ids: list[str] = []
    by_filter: list[str] = []
    for rec in found:
        doc_id = probes[str(rec.id)]
        old_count = (rec.payload or {}).get(fields.CHUNK_COUNT)
        if isinstance(old_count, int) and old_count > replace[doc_id]:
            ids += [point_id(doc_id, i) for i in range(replace[doc_id], old_count)]
        else:
            by_filter.append(doc_id)
    return ids, by_filter
