"""The collection audit finds every kind of defect it names, on hand-built collections (in a
Qdrant Edge folder)."""

import numpy as np
import pytest
from qdrant_client import models

from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.wire.payload import CHUNK_COUNT, CHUNK_INDEX, DOC_ID
from tests.audit import audit_collection


@pytest.fixture
def client(edge):
    edge.create_collection("c", CollectionSchema("c", (VectorSpec("d", "dense", 2, "m"),)))
    return edge


def put(client, rows):
    client.upsert(
        "c",
        [
            models.PointStruct(
                id=i,
                vector={"d": np.ones(2).tolist()},
                payload={DOC_ID: d, CHUNK_INDEX: k, CHUNK_COUNT: n},
            )
            for i, (d, k, n) in enumerate(rows, 1)
        ],
    )


def test_an_exact_collection_has_no_problems(client):
    put(client, [("a", 0, 2), ("a", 1, 2), ("b", 0, 1)])
    audit = audit_collection(client, "c", page_size=2)
    assert audit.problems() == [] and audit.points == 3 == audit.expected_points
    assert audit.documents == {"a", "b"}


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ([("a", 0, 3), ("a", 2, 3)], "missing [1]"),
        ([("a", 0, 2), ("a", 1, 2), ("a", 1, 2)], "duplicated [1]"),
        ([("a", 0, 1), ("a", 1, 1)], "beyond the count [1]"),
        ([("a", 0, 2), ("a", 1, 3)], "disagree on chunk_count [2, 3]"),
    ],
)
def test_each_defect_is_reported(client, rows, needle):
    put(client, rows)
    (problem,) = audit_collection(client, "c").problems()
    assert needle in problem and "'a'" in problem
