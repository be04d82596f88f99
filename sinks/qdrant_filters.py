"""Qdrant filters (qdrant-client models), built once for every backend: the filter language of
``poolq search --filter`` (parsed in ``wire/filters.py``) and the sink's own selections by
document and chunk."""

from __future__ import annotations

from collections.abc import Sequence

from qdrant_client import models

from poolq.wire import payload as fields
from poolq.wire.filters import Condition, label_name, parse_conditions


def parse_filters(exprs: Sequence[str]) -> models.Filter | None:
    """The Qdrant filter of ``exprs`` in the filter language (see ``wire/filters.py``)."""
    must: list[models.Condition] = []
    must_not: list[models.Condition] = []  # a label's pair of forms: must_not [should [a, b]]
    for c in parse_conditions(exprs):
        label = label_name(c.path)
        condition = _on_key(c, c.path) if label is None else _label_condition(c, label)
        (must_not if c.negate else must).append(condition)
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


def _on_key(c: Condition, key: str) -> models.FieldCondition:
    if c.kind == "range":
        return models.FieldCondition(key=key, range=models.Range(**dict(c.bounds)))
    assert c.value is not None  # a match condition always has its value
    return models.FieldCondition(key=key, match=models.MatchValue(value=c.value))


def _label_condition(c: Condition, label: str) -> models.Filter:
    """A label is an object ``{"label", "score"}``, or a list of them (multi-label): the
    condition holds for either form (``labels.<name>`` alone names the label's ``label``)."""
    field = c.path.split(".", 2)[2] if c.path.count(".") >= 2 else "label"
    where = f"{fields.LABELS}.{label}"
    return models.Filter(should=[_on_key(c, f"{where}.{field}"), _on_key(c, f"{where}[].{field}")])


def documents_filter(doc_ids: Sequence[str]) -> models.Filter:
    """Points of any of ``doc_ids``."""
    return models.Filter(
        must=[models.FieldCondition(key=fields.DOC_ID, match=models.MatchAny(any=list(doc_ids)))]
    )


def stale_chunks_filter(doc_id: str, n_chunks: int) -> models.Filter:
    """Points of ``doc_id`` whose ``chunk_index`` is ``n_chunks`` or more."""
    return models.Filter(
        must=[
            models.FieldCondition(key=fields.DOC_ID, match=models.MatchValue(value=doc_id)),
            models.FieldCondition(key=fields.CHUNK_INDEX, range=models.Range(gte=n_chunks)),
        ]
    )


def first_chunks_filter() -> models.Filter:
    """Every document's chunk 0 (one point per document)."""
    return models.Filter(
        must=[models.FieldCondition(key=fields.CHUNK_INDEX, match=models.MatchValue(value=0))]
    )
