"""What an ingest job may skip: ``sinks.inventory.stored_documents`` on a real embedded Qdrant.
A document counts as stored only when it is complete: its chunk 0, its last chunk with the same
text hash and profile version, and nothing past the last (a write cut short between batches, or
stale chunks a shrink left behind, are written again rather than skipped)."""

from __future__ import annotations

import pytest
from qdrant_client import QdrantClient, models

from poolq.sinks.inventory import MISSING, collection_names, first_value, stored_documents
from poolq.sinks.points import point_id
from poolq.sinks.store.client import ClientStore
from poolq.wire.payload import build_payload

COLLECTION = "docs"


def payload(doc_id, i, count, doc_hash="h", version="v1", metadata=None):
    return build_payload(
        doc_id=doc_id,
        chunk_index=i,
        chunk_count=count,
        text=f"{doc_id} {i}",
        char_start=0,
        char_end=1,
        chunk_hash="c",
        doc_hash=doc_hash,
        meta_hash="m",
        metadata=metadata or {},
        models={"dense": "m"},
        profile_version=version,
        ingested_at="2026-01-01T00:00:00+00:00",
    )


@pytest.fixture
def client(tmp_path):
    c = QdrantClient(path=str(tmp_path / "q"))
    c.create_collection(COLLECTION, vectors_config=models.VectorParams(size=2, distance="Cosine"))
    yield c
    c.close()


def store_of(client):
    """The server backend's store around the client (the reads go through the store API)."""
    return ClientStore(client, description="test", local=True)


def put(client, doc_id, chunks, count=None, **kw):
    client.upsert(
        COLLECTION,
        points=[
            models.PointStruct(
                id=point_id(doc_id, i),
                vector=[1.0, 0.0],
                payload=payload(doc_id, i, count or len(chunks), **kw),
            )
            for i in chunks
        ],
        wait=True,
    )


def test_only_complete_documents_count_as_stored(client):
    put(client, "one", [0])  # a single chunk
    put(client, "three", [0, 1, 2])  # complete
    put(client, "cut", [0, 1], count=3)  # its last chunk never landed
    put(client, "mixed", [0, 1], count=2)  # its last chunk is of another text
    put(client, "mixed", [1], count=2, doc_hash="older")
    put(client, "stale", [0, 1], count=2)  # shrank to 2, chunk 2 of the old text still there
    put(client, "stale", [2], count=3, doc_hash="older")
    put(client, "old-profile", [0, 1], version="v0")  # complete, under another profile version
    got = stored_documents(
        store_of(client),
        COLLECTION,
        ["one", "three", "cut", "mixed", "stale", "old-profile", "absent"],
    )
    assert sorted(got) == ["old-profile", "one", "three"]
    three = got["three"]
    assert (three.doc_hash, three.meta_hash, three.profile_version, three.chunk_count) == (
        "h",
        "m",
        "v1",
        3,
    )
    assert got["old-profile"].profile_version == "v0"  # the caller compares versions
    assert stored_documents(store_of(client), COLLECTION, []) == {}


def test_collection_names_and_field_lookups(client):
    put(client, "a", [0], metadata={"lang": "en", "year": 2020, "venue": {"name": "X"}})
    client.create_collection(
        "kb__20260101000000_abcd", vectors_config=models.VectorParams(size=2, distance="Cosine")
    )
    client.update_collection_aliases(
        change_aliases_operations=[
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(
                    collection_name="kb__20260101000000_abcd", alias_name="kb"
                )
            )
        ]
    )
    assert collection_names(store_of(client)) == [
        "docs",
        "kb",
    ]  # the physical one behind "kb" is hidden
    assert first_value(store_of(client), COLLECTION, "metadata.lang", numeric=False) == "en"
    assert first_value(store_of(client), COLLECTION, "metadata.year", numeric=True) == 2020
    assert first_value(store_of(client), COLLECTION, "metadata.venue.name", numeric=False) == "X"
    assert first_value(store_of(client), COLLECTION, "metadata.lang", numeric=True) is MISSING
    assert first_value(store_of(client), COLLECTION, "metadata.colour", numeric=False) is MISSING
