"""The payload schema has one owner (``wire/payload.py``): the payload ingest writes, the fields
the filter language routes top-level, and what the audit and the inventory read all agree."""

import pytest

from poolq.sinks.collections import ensure_collection
from poolq.sinks.inventory import INVENTORY_FIELDS, document_inventory
from poolq.sinks.points import PointRecord, point_id, to_point_struct
from poolq.sinks.qdrant_filters import parse_filters
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.search import SearchRequest, search_points
from poolq.wire import payload as schema
from poolq.wire.documents import Document
from poolq.wire.filters import payload_path
from poolq.worker.chunks.chunking import Chunk
from poolq.worker.chunks.points import document_points
from tests.audit import audit_collection

TEXT = "Alpha beta. Gamma delta."
DOC = Document("doc-1", TEXT, {"lang": "en", "year": 2020})
CHUNKS = [Chunk(0, "Alpha beta.", 0, 11), Chunk(1, "Gamma delta.", 12, 24)]
MODELS = {"dense": "org/dense-model", "sparse": "org/sparse-model"}
NOW = "2024-05-01T12:00:00+00:00"


def ingest_points(doc=DOC, chunks=CHUNKS, profile_version="pv-1"):
    vectors = [{"dense": [1.0, float(c.index)]} for c in chunks]
    return document_points(
        doc, chunks, vectors, models=MODELS, ingested_at=NOW, profile_version=profile_version
    )


def filter_key(expr):
    f = parse_filters([expr])
    assert f is not None
    (cond,) = f.must or f.must_not or []  # type: ignore[misc]
    return cond.key  # type: ignore[union-attr]


@pytest.mark.parametrize("field", ["profile_version", "meta_hash"])
def test_hash_and_version_filters_are_top_level(field):
    """The drift once seen: these were looked up in ``metadata.*``, where no point has them."""
    assert filter_key(f"{field}=abc") == field
    assert filter_key(f"{field}!=abc") == field


def test_every_field_ingest_writes_is_filtered_top_level():
    """The guard against drift: a new payload field in ingest that the filters don't know (or a
    filter field that points don't carry) fails here."""
    (point, *_) = ingest_points()
    written = set(point.payload) - {"metadata"}
    assert written == set(schema.TOP_LEVEL_FIELDS)
    for key in sorted(written):
        assert payload_path(key) == key
        assert filter_key(f"{key}=x") == key
        assert filter_key(f"{key}>=1") == key


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("lang", "metadata.lang"),
        ("source.path", "metadata.source.path"),
        ("doc", "metadata.doc"),
        ("doc_id_x", "metadata.doc_id_x"),
        ("metadata.lang", "metadata.lang"),
        ("models.dense", "models.dense"),  # the model behind a vector, in the top-level object
    ],
)
def test_other_keys_go_to_metadata(key, path):
    assert payload_path(key) == path
    assert filter_key(f"{key}=x") == path


def test_the_ingested_payload_is_the_expected_dict():
    """Keys, values and key order exactly as collections already hold them (compatibility)."""
    points = ingest_points()
    expected = [
        {
            "doc_id": "doc-1",
            "chunk_index": i,
            "chunk_count": 2,
            "text": c.text,
            "char_start": c.start,
            "char_end": c.end,
            "chunk_hash": c.content_hash,
            "doc_hash": DOC.content_hash,
            "meta_hash": DOC.metadata_hash,
            "metadata": {"lang": "en", "year": 2020},
            "models": MODELS,
            "profile_version": "pv-1",
            "ingested_at": NOW,
            # the citation fields, after every field collections already hold: a document
            # sent as text cites nothing (a parsed file's: tests/parse, tests/integration)
            "source": None,
            "title": None,
            "mime": "text/plain",
            "page_start": None,
            "page_end": None,
            "headings": [],
            "file_hash": None,
            "ocr": False,
        }
        for i, c in enumerate(CHUNKS)
    ]
    assert [p.payload for p in points] == expected
    assert [list(p.payload) for p in points] == [list(e) for e in expected]
    assert [p.id for p in points] == [point_id("doc-1", 0), point_id("doc-1", 1)]
    assert points[0].payload["models"] is not MODELS  # a copy, not the caller's mapping
    built = schema.build_payload(
        doc_id="doc-1",
        chunk_index=1,
        chunk_count=2,
        text="Gamma delta.",
        char_start=12,
        char_end=24,
        chunk_hash=CHUNKS[1].content_hash,
        doc_hash=DOC.content_hash,
        meta_hash=DOC.metadata_hash,
        metadata=DOC.metadata,
        models=MODELS,
        profile_version="pv-1",
        ingested_at=NOW,
    )
    assert built == expected[1] and list(built) == list(expected[1])
    assert list(built) == list(schema.PAYLOAD_FIELDS)


def test_field_constants_name_the_written_keys():
    assert set(schema.PAYLOAD_FIELDS) == set(schema.TOP_LEVEL_FIELDS) | {schema.METADATA}
    assert set(INVENTORY_FIELDS) <= set(schema.TOP_LEVEL_FIELDS)
    assert (schema.DOC_ID, schema.META_HASH, schema.PROFILE_VERSION) == (
        "doc_id",
        "meta_hash",
        "profile_version",
    )


@pytest.fixture
def collection(edge):
    ensure_collection(edge, CollectionSchema("c", (VectorSpec("dense", "dense", 2, "m"),)))
    points: list[PointRecord] = ingest_points() + ingest_points(
        Document("doc-2", "Epsilon.", {"lang": "de"}), [Chunk(0, "Epsilon.", 0, 8)], "pv-2"
    )
    edge.upsert("c", [to_point_struct(p) for p in points])
    return edge


def test_filters_on_written_fields_find_the_points(collection):
    """End to end: points built by ingest, in Qdrant, found by their top-level fields."""
    dense = CollectionSchema("c", (VectorSpec("dense", "dense", 2, "m"),))
    other = Document("doc-2", "Epsilon.", {"lang": "de"})

    def docs(*filters):
        req = SearchRequest("c", "dense", 10, filters)
        hits = search_points(collection, dense, req, {"dense": [1.0, 0.5]})
        return sorted({h.doc_id for h in hits})

    assert docs("profile_version=pv-2") == ["doc-2"]
    assert docs(f"meta_hash={DOC.metadata_hash}") == ["doc-1"]
    assert docs(f"meta_hash!={DOC.metadata_hash}") == ["doc-2"]
    assert docs(f"doc_hash={other.content_hash}") == ["doc-2"]
    assert docs("models.dense=org/dense-model") == ["doc-1", "doc-2"]
    assert docs("lang=en", "chunk_count=2") == ["doc-1"]


def test_audit_and_inventory_read_what_ingest_writes(collection):
    audit = audit_collection(collection, "c")
    assert audit.problems() == [] and audit.points == 3 and audit.documents == {"doc-1", "doc-2"}
    inv = document_inventory(collection, "c")
    assert inv["doc-1"].doc_hash == DOC.content_hash
    assert inv["doc-1"].meta_hash == DOC.metadata_hash
    assert (inv["doc-1"].profile_version, inv["doc-1"].chunk_count) == ("pv-1", 2)
    assert (inv["doc-2"].profile_version, inv["doc-2"].chunk_count) == ("pv-2", 1)
