"""Filters on a profile's labels (``labels.<name>``): a label is an object ``{"label", "score"}``
or, for a multi-label classifier, a list of them, and one filter matches either form — checked
on a real embedded store (Qdrant Edge); a range on the label itself is refused with a hint; the
search path's field check lets ``labels.<name>.score`` ranges through."""

from __future__ import annotations

import numpy as np
import pytest

from poolq.sinks.points import PointRecord, point_id
from poolq.sinks.qdrant_filters import parse_filters
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.filters import parse_conditions
from poolq.wire.search_results import SearchError
from poolq.worker.runtime.collection_fields import filter_problem

LABELS = {
    "one": {"topic": {"label": "billing", "score": 0.91}},
    "low": {"topic": {"label": "billing", "score": 0.42}},
    "many": {"topic": [{"label": "shipping", "score": 0.8}, {"label": "billing", "score": 0.6}]},
    "other": {"topic": [{"label": "returns", "score": 0.95}]},
    "none": {"topic": []},
}


@pytest.fixture
def store(tmp_path):
    s = EdgeStore(tmp_path / "edge")
    s.create_collection("c", CollectionSchema("c", (VectorSpec("dense", "dense", 4, "m"),)))
    s.upsert_records(
        "c",
        [
            PointRecord(point_id(doc, 0), {"dense": np.ones(4, np.float32)},
                        {"doc_id": doc, "labels": labels})
            for doc, labels in LABELS.items()
        ],
    )  # fmt: skip
    yield s
    s.close()


def matching(store, *exprs: str) -> set[str]:
    records, _ = store.scroll("c", limit=100, flt=parse_filters(list(exprs)))
    return {r.payload["doc_id"] for r in records}


def test_a_label_matches_an_object_or_a_list(store):
    assert matching(store, "labels.topic=billing") == {"one", "low", "many"}
    assert matching(store, "labels.topic=returns") == {"other"}
    assert matching(store, "labels.topic!=billing") == {"other", "none"}


def test_a_labels_score_is_read_in_either_form(store):
    assert matching(store, "labels.topic.score>=0.8") == {"one", "many", "other"}
    assert matching(store, "labels.topic=billing", "labels.topic.score<0.5") == {"low"}


def test_a_range_on_the_label_itself_is_refused_with_the_way_to_write_it():
    with pytest.raises(
        SearchError,
        match=r"matches its name \(labels.topic=NAME\); a range reads its score: labels.topic.score>=N",
    ):
        parse_conditions(["labels.topic>0.5"])


def test_the_field_check_lets_label_filters_through():
    for expr in ("labels.topic=billing", "labels.topic.score>=0.8"):
        (condition,) = parse_conditions([expr])
        assert filter_problem(expr, condition, {}) is None, expr
