"""Reindex planning, schedules and profile versions: pure functions against hand-made cases."""

from datetime import datetime

import pytest
from arq.cron import next_cron

from poolq.sinks.inventory import StoredDocument
from poolq.wire.documents import Document
from poolq.worker.config.profile import Profile
from poolq.worker.config.schedule import ReindexSchedule, cron_jobs, parse_cron
from poolq.worker.config.settings import load_settings
from poolq.worker.config.versions import profile_version
from poolq.worker.engine.checkpoints.fingerprints import checkpoint_fingerprint
from poolq.worker.reindex.plan import plan_reindex

V = "v1"


def stored(doc: Document, version=V, chunks=1, meta_hash=None):
    return StoredDocument(doc.id, doc.content_hash, meta_hash or doc.metadata_hash, version, chunks)


def test_plan_sorts_every_document_into_one_bucket():
    a, b, c, d, e = (Document(x, f"text {x}", {"k": x}) for x in "abcde")
    have = {
        "a": stored(a),  # unchanged
        "b": stored(Document("b", "old text")),  # text changed
        "c": stored(c, version="v0"),  # written by another profile version
        "d": stored(d, meta_hash="other"),  # metadata changed only
        "gone": StoredDocument("gone", "h", "m", V, 3),
    }
    plan = plan_reindex([a, b, c, d, e], have, V)
    assert plan.unchanged == 1
    assert [x.id for x in plan.changed] == ["b"]
    assert [x.id for x in plan.stale] == ["c"]
    assert [x.id for x in plan.metadata_only] == ["d"]
    assert [x.id for x in plan.new] == ["e"]
    assert [x.doc_id for x in plan.removed] == ["gone"]
    assert {x.id for x in plan.to_encode} == {"b", "c", "e"}
    assert plan.counts() == {
        "new": 1, "changed": 1, "stale": 1, "metadata_only": 1, "unchanged": 1, "removed": 1
    }  # fmt: skip


def test_metadata_hash_ignores_key_order_but_not_values():
    x = Document("x", "t", {"a": 1, "b": [1, 2]})
    assert x.metadata_hash == Document("x", "t", {"b": [1, 2], "a": 1}).metadata_hash
    assert x.metadata_hash != Document("x", "t", {"a": 1, "b": [2, 1]}).metadata_hash


def test_profile_version_changes_with_what_vectors_depend_on(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    fp = checkpoint_fingerprint(tmp_path)
    base = Profile.from_dict(None)
    fps = dict.fromkeys(base.models, fp)
    v = profile_version(base, fps)
    assert v == profile_version(Profile.from_dict(None), fps)  # deterministic
    assert v != profile_version(Profile.from_dict({"chunking": {"overlap_tokens": 8}}), fps)
    dims = {"vectors": {"dense": {"task": "embed", "dimensions": 128}}}
    assert profile_version(Profile.from_dict(dims), fps) != profile_version(
        Profile.from_dict({"vectors": {"dense": {"task": "embed"}}}), fps
    )
    (tmp_path / "model.safetensors").write_bytes(b"weightz")  # same size, other bytes
    assert profile_version(base, dict.fromkeys(base.models, checkpoint_fingerprint(tmp_path))) != v


@pytest.mark.parametrize(
    ("expr", "now", "expected"),
    [
        ("0 3 * * *", datetime(2026, 1, 1, 12, 0), datetime(2026, 1, 2, 3, 0)),
        ("*/15 * * * *", datetime(2026, 1, 1, 12, 1), datetime(2026, 1, 1, 12, 15)),
        ("30 6 * * 1", datetime(2026, 11, 29, 0, 0), datetime(2026, 11, 30, 6, 30)),  # Monday
        ("0 0 * * 0", datetime(2026, 11, 24, 0, 0), datetime(2026, 11, 29, 0, 0)),  # Sunday
        ("0 0 * * 7", datetime(2026, 11, 24, 0, 0), datetime(2026, 11, 29, 0, 0)),  # Sunday
        ("0 9-17/4 1,15 * *", datetime(2026, 3, 1, 10, 0), datetime(2026, 3, 1, 13, 0)),
        ("*/5 * * * * *", datetime(2026, 1, 1, 0, 0, 1), datetime(2026, 1, 1, 0, 0, 5)),
    ],
)
def test_cron_expressions_fire_when_cron_would(expr, now, expected):
    fields = {k: v for k, v in parse_cron(expr).items() if v is not None}
    assert next_cron(now, **fields).replace(microsecond=0) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expr", "msg"),
    [
        ("* * *", "expected 5 fields"),
        ("61 * * * *", "outside 0-59"),
        ("x * * * *", "expected a number"),
        ("*/0 * * * *", "step must be >= 1"),
        ("5-2 * * * *", "outside"),
    ],
)
def test_bad_cron_expressions_say_what_is_wrong(expr, msg):
    with pytest.raises(ValueError, match=msg):
        parse_cron(expr)


def test_reindex_tables_in_the_config_become_unique_cron_jobs(tmp_path):
    cfg = tmp_path / "poolq.toml"
    cfg.write_text(
        '[[reindex]]\nsource = "/data/a.jsonl"\ncollection = "a"\ncron = "0 3 * * *"\n'
        '[[reindex]]\nsource = "/data/b"\ncollection = "b"\ncron = "*/10 * * * * *"\nfull = true\n'
    )
    s = load_settings(cfg, environ={})
    assert s.reindex == (
        ReindexSchedule("/data/a.jsonl", "a", "0 3 * * *"),
        ReindexSchedule("/data/b", "b", "*/10 * * * * *", full=True),
    )

    async def run(ctx, *args):
        return args

    jobs = cron_jobs(s.reindex, run, 60)
    assert [j.name for j in jobs] == ["reindex:a:0", "reindex:b:1"]
    assert all(j.unique for j in jobs)  # several workers: one run per scheduled time
    assert jobs[0].hour == {3} and jobs[1].second == set(range(0, 60, 10))
    cfg.write_text('[[reindex]]\nsource = "x"\ncollection = "a"\ncron = "bad"\n')
    with pytest.raises(ValueError, match="cron 'bad'"):
        load_settings(cfg, environ={})
    cfg.write_text('[[reindex]]\nsource = "x"\ncron = "* * * * *"\n')
    with pytest.raises(ValueError, match="missing \\['collection'\\]"):
        load_settings(cfg, environ={})


async def test_cron_job_passes_its_schedule_to_the_reindex():
    calls = []

    async def run(ctx, *args):
        calls.append(args)

    (job,) = cron_jobs((ReindexSchedule("/s", "c", "* * * * *", True, True),), run, 60)
    await job.coroutine({})
    assert calls == [("/s", "c", True, True)]
