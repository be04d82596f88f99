"""The collection field registry (``worker/runtime/collection_fields.py``): the keys and JSON
types a write records (merged atomically in a real redis-server by concurrent writers), and which
filters it refuses and how it says so."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.filters import parse_conditions
from poolq.worker.runtime.collection_fields import (
    RecentFields,
    filter_problem,
    metadata_fields,
    read_fields,
    record_fields,
    registry_name,
)


def test_metadata_fields_flatten_nested_keys_with_their_types():
    got = metadata_fields(
        [
            {"lang": "en", "n": 1, "tags": ["a", 2], "m": {"x": 1.5, "ok": True}, "none": None},
            {"lang": 3, "authors": [{"name": "A"}], "grid": [[1]]},
        ]
    )
    assert got == {
        "lang": {"string", "integer"},
        "n": {"integer"},
        "tags": {"array", "string", "integer"},
        "m": {"object"},
        "m.x": {"float"},
        "m.ok": {"boolean"},
        "none": {"null"},
        "authors": {"array"},
        "authors.name": {"string"},
        "grid": {"array", "integer"},
    }


def test_a_physical_collection_records_under_its_alias():
    assert registry_name("docs__20260101000000_ab12") == "docs"
    assert registry_name("docs") == "docs" and registry_name("a__b") == "a__b"


FIELDS = {"lang": {"string"}, "year": {"integer"}, "tags": {"array", "string"}, "v": {"object"}}
FIELDS |= {"v.name": {"string"}}


def problem(expr):
    (condition,) = parse_conditions([expr])
    return filter_problem(expr, condition, FIELDS)


@pytest.mark.parametrize(
    "expr",
    [
        *("lang=en", "metadata.lang=en", "year>=2020", "tags=a", "v.name=X", "v=x"),
        *("doc_id=a", "chunk_index>0", "models.dense=m", "year=2020.0", "lang!=de"),
    ],
)
def test_filters_that_may_match_pass(expr):
    assert problem(expr) is None


def test_an_unknown_key_is_named_with_the_known_fields():
    p = problem("language=en")
    assert p is not None and p.kind == "unknown" and p.metadata
    message = p.message("docs", FIELDS)
    assert message.startswith("filter 'language=en': collection 'docs' has no field 'language'")
    assert "known fields: metadata lang, tags, v, v.name, year; payload " in message
    assert "doc_id" in message and "chunk_index" in message
    assert problem("metadata.colour=red").key == "metadata.colour"


def test_a_range_on_strings_is_refused_saying_what_the_field_holds():
    p = problem("lang>3")
    assert p is not None and p.kind == "range"
    assert p.message("docs", FIELDS) == (
        "filter 'lang>3': a range needs numbers, but field 'lang' of collection 'docs' holds "
        "string values"
    )
    hinted = problem("lang=1.5").message("docs", FIELDS)  # a decimal matches as a range
    assert 'quote the value to match it as a string: lang="..."' in hinted
    top = problem("doc_id>=1")
    assert (
        top is not None
        and not top.metadata
        and "holds string values" in top.message("docs", FIELDS)
    )


async def test_concurrent_writers_merge_their_types(redis_server):
    redis = Redis.from_url(redis_server.url)
    try:
        writes = [
            record_fields(
                redis, "docs__20260101000000_ab12", {"k": {"string"}, f"only{i}": {"null"}}
            )
            for i in range(20)
        ] + [record_fields(redis, "docs", {"k": {"integer"}}) for _ in range(20)]
        await asyncio.gather(*writes)
        got = await read_fields(redis, "docs")
        assert got["k"] == {"string", "integer"}
        assert {f"only{i}" for i in range(20)} <= set(got)
        raw = await redis.hget(constants.COLLECTION_FIELDS_KEY.format(collection="docs"), "k")
        assert sorted(raw.decode().split(",")) == ["integer", "string"]  # comma-separated
    finally:
        await redis.aclose()


def test_recent_fields_skip_only_what_was_recorded_lately(monkeypatch):
    from poolq.worker.runtime import collection_fields

    now = [100.0]
    monkeypatch.setattr(collection_fields.time, "monotonic", lambda: now[0])
    recent = RecentFields(remember_s=60.0)
    fields = {"lang": {"string"}, "n": {"integer"}}
    assert recent.new_in("docs", fields)
    recent.recorded("docs", fields)
    assert not recent.new_in("docs", {"lang": {"string"}}), "nothing new: no call"
    assert not recent.new_in("docs__20260101000000_abcd", fields), "an alias's physical one"
    assert recent.new_in("docs", {"n": {"integer", "float"}}), "a new type"
    assert recent.new_in("docs", {"tags": {"array", "string"}}), "a new key"
    assert recent.new_in("other", {"lang": {"string"}}), "another collection"
    now[0] += 61.0
    assert recent.new_in("docs", {"lang": {"string"}}), "forgotten: Redis may have lost it"
