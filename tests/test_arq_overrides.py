"""arq is in maintenance mode and poolq subclasses its ``Worker`` once
(``worker/reliability/arq_overrides.py``). These tests pin arq's signature and behaviour under
each override (and fail when they change), check that ``WorkerSettings`` holds the arguments
``poolq worker`` gives its worker, and that arq's own CLI worker is refused at start-up."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import subprocess
import sys
import time
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import arq
import arq.worker
import pytest
from arq.worker import Worker, create_worker, func, get_kwargs

from poolq.wire.connection import redis_settings
from poolq.wire.serialization import REJECTED_JOB
from poolq.worker.reliability.arq_overrides import (
    ARQ_TESTED,
    OVERRIDDEN,
    NotAPoolqWorkerError,
    PoolqWorker,
    poolq_worker,
)

ROOT = Path(__file__).resolve().parents[1]


def _minor(v: str) -> tuple[int, int]:
    major, minor = v.split(".")[:2]
    return int(major), int(minor)


def test_arq_is_a_tested_version_and_pyproject_pins_that_range():
    low, high = ARQ_TESTED
    assert low <= _minor(arq.VERSION) <= high, f"arq {arq.VERSION}: re-check arq_overrides.py"
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if d.startswith("arq")]
    m = re.fullmatch(r"arq>=(\d+\.\d+),<(\d+)\.(\d+)(\s*#.*)?", pin.split("#")[0].strip())
    assert m, pin
    assert _minor(m.group(1)) == low and (int(m.group(2)), int(m.group(3)) - 1) == high


@pytest.mark.parametrize("name", OVERRIDDEN)
def test_each_overridden_method_still_exists_with_the_same_signature(name):
    ours, theirs = getattr(PoolqWorker, name), getattr(Worker, name, None)
    assert theirs is not None, f"arq.worker.Worker.{name} is gone"
    assert inspect.iscoroutinefunction(theirs)

    def shape(f):
        return [(p.name, p.kind) for p in inspect.signature(f).parameters.values()]

    assert shape(ours) == shape(theirs), name
    assert name in PoolqWorker.__dict__


def test_what_the_overrides_call_is_still_there():
    src = inspect.getsource(Worker)
    # _poll_iteration is awaited by main's poll loop (an exception there ends main); it hands
    # the due ids it read, in score order, to start_jobs; run_job is started per job id
    assert "await self._poll_iteration()" in inspect.getsource(Worker.main)
    poll = inspect.getsource(Worker._poll_iteration)
    assert "zrangebyscore(" in poll and "await self.start_jobs(job_ids)" in poll
    assert "self.run_job(" in inspect.getsource(Worker.start_jobs)
    # a Retry re-scores the job to arq's now + defer (job_guard.retry_in_place, placement.py)
    run_job = inspect.getsource(Worker.run_job)
    assert "incr_score = e.defer_score + (timestamp_ms() - score)" in run_job
    assert "tr.zincrby(self.queue_name, incr_score, job_id)" in inspect.getsource(Worker.finish_job)
    # finish_failed_job: jobs failed without running (expired / max tries / unknown function)
    assert src.count("self.finish_failed_job(job_id, ") >= 2
    # on_startup gets the worker's ctx, where PoolqWorker puts itself
    assert "await self.on_startup(self.ctx)" in inspect.getsource(Worker.main)
    params = inspect.signature(Worker.__init__).parameters
    assert params["job_completion_wait"].kind is inspect.Parameter.KEYWORD_ONLY
    # public attributes the overrides and the reaper read
    w = Worker(functions=[func(_noop, name="noop")], redis_settings=redis_settings("redis://x"))
    for attr in (
        "queue_name", "in_progress_timeout_s", "functions", "jobs_complete", "tasks",
        "job_counter", "max_jobs", "job_deserializer", "ctx", "after_job_end", "on_job_end",
    ):  # fmt: skip
        assert hasattr(w, attr), attr


def test_poolq_worker_puts_itself_in_ctx():
    w = PoolqWorker(
        functions=[func(_noop, name="noop")], redis_settings=redis_settings("redis://x")
    )
    assert w.ctx["arq_worker"] is w and poolq_worker(w.ctx) is w


async def test_arqs_own_worker_is_refused_at_start_up_naming_poolq_worker(redis_server):
    """As ``arq poolq.worker.app.WorkerSettings`` runs it: arq constructs its own Worker from a
    settings class; the worker's start-up (here the job index's part of it) stops it with one
    line naming ``poolq worker``."""
    from poolq.worker.reliability.job_index_hooks import install_job_index

    settings_cls = type(
        "S",
        (),
        {
            "functions": [func(_noop, name="noop")],
            "redis_settings": redis_settings(redis_server.url),
            "on_startup": install_job_index,
            "burst": True,
            "poll_delay": 0.01,
        },
    )
    worker = create_worker(settings_cls)
    assert type(worker) is Worker
    try:
        with pytest.raises(NotAPoolqWorkerError, match="poolq worker") as e:
            await worker.async_run()
        assert "\n" not in str(e.value)
    finally:
        await worker.close()


async def _noop(ctx):
    return None


@pytest.mark.slow  # a fresh interpreter
def test_arq_cli_settings_and_poolq_worker_are_built_the_same(tmp_path):
    """``arq poolq.worker.app.WorkerSettings`` reads the config file and POOLQ_* variables, and
    hands arq every argument ``poolq worker`` gives its worker."""
    config = tmp_path / "poolq.toml"
    config.write_text(
        '[worker]\nmax_jobs = 7\nshutdown_grace_s = 3\n\n[[reindex]]\nsource = "/data/docs"\n'
        'collection = "docs"\ncron = "0 3 * * *"\n'
    )
    code = (
        "import json\n"
        "from arq.worker import get_kwargs\n"
        "from poolq.worker.app import WorkerSettings\n"
        "from poolq.worker.app.worker_settings import worker_kwargs, startup\n"
        "from poolq.worker.config.settings import load_settings\n"
        "kw = get_kwargs(WorkerSettings)\n"
        "ref = worker_kwargs(load_settings())\n"
        "print(json.dumps({'keys': sorted(kw), 'ref': sorted(ref), 'max_jobs': kw['max_jobs'],\n"
        "  'max_tries': kw['max_tries'], 'grace': kw['job_completion_wait'],\n"
        "  'cron': [c.name for c in kw['cron_jobs']], 'startup': kw['on_startup'] is startup,\n"
        "  'functions': sorted(f.name for f in kw['functions']),\n"
        "  'ingest_tries': [f.max_tries for f in kw['functions'] if f.name == 'ingest'][0],\n"
        "  'redis': kw['redis_settings'].port}))\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "POOLQ_CONFIG": str(config),
        "POOLQ_MAX_TRIES": "9",
        "POOLQ_REDIS_URL": "redis://localhost:6390/0",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["keys"] == got["ref"]  # arq accepts every argument poolq worker passes
    assert got["max_jobs"] == 7 and got["grace"] == 3  # from the config file
    assert got["max_tries"] == 9 and got["ingest_tries"] == 9  # from POOLQ_MAX_TRIES
    assert got["redis"] == 6390
    assert len(got["cron"]) == 1 and got["startup"]
    assert got["functions"] == sorted(["ingest", "reindex", REJECTED_JOB])


def test_get_kwargs_keeps_every_argument_of_worker_kwargs():
    from poolq.worker.app.worker_settings import build_worker_settings, worker_kwargs
    from poolq.worker.config.settings import Settings

    s = Settings()
    assert set(get_kwargs(build_worker_settings(s))) == set(worker_kwargs(s))
    assert arq.worker.Worker is Worker


async def _wait_forever(ctx, **_kwargs):
    await asyncio.Event().wait()


async def test_start_jobs_takes_by_capacity_and_never_runs_a_job_twice_here(redis_server):
    """The admission override of ``start_jobs``: bulk jobs only while there is room (the rest
    stay queued), interactive ones regardless: the lane is the job record's ``priority`` (the
    client also scores them years ahead, so they come first); and a job running in this
    worker whose in-progress mark was dropped is not started again (its mark is set back)."""
    from arq.connections import create_pool
    from arq.constants import in_progress_key_prefix

    from poolq.wire import constants
    from poolq.worker.runtime.admission import Admission

    pool = await create_pool(redis_settings(redis_server.url))
    w = PoolqWorker(functions=[func(_wait_forever, name="wait")], redis_pool=pool, queue_name="q")
    queued = [0]
    w.admission = Admission(100, lambda: queued[0])
    try:
        for i in range(3):
            await pool.enqueue_job("wait", priority="bulk", _job_id=f"bulk{i}", _queue_name="q")
        past = time.time() - constants.INTERACTIVE_HEAD_START_MS / 1000
        for job_id, priority, at in (("inter", "interactive", past), ("early", "bulk", past + 1)):
            await pool.enqueue_job(
                "wait",
                priority=priority,
                _job_id=job_id,
                _queue_name="q",
                _defer_until=datetime.fromtimestamp(at, UTC),
                _expires=timedelta(days=1),
            )
        ids = await pool.zrangebyscore("q", "-inf", "+inf")
        assert ids[:2] == [b"inter", b"early"]  # ahead of every bulk job
        queued[0] = 100  # the engines are full
        await w.start_jobs(ids)
        # "early" is scored like an interactive job, but its record says bulk: it waits
        assert sorted(w.tasks) == ["inter"]  # the bulk jobs wait in Redis
        queued[0] = 0
        await w.start_jobs([b"bulk0", b"bulk1"])  # room again: one is taken, its estimate counts
        assert "bulk0" in w.tasks
        first = w.tasks["bulk0"]
        await pool.delete(in_progress_key_prefix + "bulk0")  # dropped while it runs here
        w.admission = None
        await w.start_jobs([b"bulk0"])
        assert w.tasks["bulk0"] is first  # not a second local run
        assert await pool.exists(in_progress_key_prefix + "bulk0")  # its mark is back
    finally:
        for t in w.tasks.values():
            t.cancel()
        await asyncio.gather(*w.tasks.values(), return_exceptions=True)
        await pool.aclose()


async def test_arqs_start_jobs_starts_one_id_only_when_due_queued_and_not_running(redis_server):
    """What ``PoolqWorker.start_jobs`` relies on when it hands arq's ``start_jobs`` one admitted
    id: a due, queued job not running anywhere is marked in progress (with arq's TTL) and its
    task is in ``tasks``; one whose mark is set, one gone from the queue and one deferred are
    left out of ``tasks``, arq's counter as it was; none starts while ``max_jobs`` run."""
    from arq.connections import create_pool
    from arq.constants import in_progress_key_prefix

    pool = await create_pool(redis_settings(redis_server.url))
    w = PoolqWorker(
        functions=[func(_wait_forever, name="wait")], redis_pool=pool, queue_name="q", max_jobs=2
    )
    try:
        for job_id in ("ready", "marked", "gone", "second", "third"):
            await pool.enqueue_job("wait", _job_id=job_id, _queue_name="q")
        await pool.enqueue_job(
            "wait",
            _job_id="later",
            _queue_name="q",
            _defer_until=datetime.now(UTC) + timedelta(hours=1),
        )
        await pool.set(in_progress_key_prefix + "marked", b"1")
        await pool.zrem("q", "gone")
        await Worker.start_jobs(w, [b"ready"])
        assert sorted(w.tasks) == ["ready"] and w.job_counter == 1
        ttl_ms = await pool.pttl(in_progress_key_prefix + "ready")
        assert 0.9 * w.in_progress_timeout_s * 1000 < ttl_ms <= w.in_progress_timeout_s * 1000
        for job_id in (b"marked", b"gone", b"later", b"ready"):
            await Worker.start_jobs(w, [job_id])
            assert sorted(w.tasks) == ["ready"] and w.job_counter == 1, job_id
        await Worker.start_jobs(w, [b"second"])
        await Worker.start_jobs(w, [b"third"])  # max_jobs running: left queued
        assert sorted(w.tasks) == ["ready", "second"] and w.job_counter == 2
    finally:
        for t in w.tasks.values():
            t.cancel()
        await asyncio.gather(*w.tasks.values(), return_exceptions=True)
        await pool.aclose()


async def test_a_start_redis_refuses_leaves_the_job_queued(redis_server):
    """arq treats a refused claim (``ResponseError``: out of memory, a read-only replica) as a
    job started elsewhere: nothing started, its counter as it was, the job still queued."""
    from arq.connections import create_pool

    pool = await create_pool(redis_settings(redis_server.url))
    w = PoolqWorker(functions=[func(_wait_forever, name="wait")], redis_pool=pool, queue_name="q")
    try:
        await pool.enqueue_job("wait", _job_id="oom", _queue_name="q")
        await pool.config_set("maxmemory", "1")  # every write refused: OOM
        try:
            await w.start_jobs([b"oom"])
        finally:
            await pool.config_set("maxmemory", "0")
        assert w.tasks == {} and w.job_counter == 0
        assert await pool.zscore("q", "oom") is not None  # still queued
    finally:
        await pool.aclose()


async def test_a_retried_interactive_job_waits_out_its_backoff_though_scored_first(redis_server):
    """A retried interactive job is scored ahead of every bulk job (``wire/placement.py``) but
    is not due before its backoff passed: the bulk job behind it starts, it rests."""
    from arq.connections import create_pool

    from poolq.wire.placement import score_ms

    pool = await create_pool(redis_settings(redis_server.url))
    w = PoolqWorker(functions=[func(_wait_forever, name="wait")], redis_pool=pool, queue_name="q")
    try:
        for job_id, priority in (("inter", "interactive"), ("bulk", "bulk")):
            await pool.enqueue_job("wait", priority=priority, _job_id=job_id, _queue_name="q")
        now_ms = round(time.time() * 1000)
        await pool.zadd("q", {"inter": score_ms("interactive", now_ms, delay_ms=60_000)})
        ids = await pool.zrangebyscore("q", "-inf", now_ms)
        assert ids == [b"inter", b"bulk"]  # what a poll reads: ahead of the bulk job
        await w.start_jobs(ids)
        assert sorted(w.tasks) == ["bulk"]
        await w.start_jobs(ids)  # its due time is remembered: not read again
        assert sorted(w.tasks) == ["bulk"] and "inter" in w.resting
        await pool.zadd("q", {"inter": score_ms("interactive", now_ms, delay_ms=-1)})
        w.resting.clear()  # (as when its due time has come)
        await w.start_jobs([b"inter"])
        assert sorted(w.tasks) == ["bulk", "inter"]
    finally:
        for t in w.tasks.values():
            t.cancel()
        await asyncio.gather(*w.tasks.values(), return_exceptions=True)
        await pool.aclose()


@pytest.mark.slow  # a fresh interpreter that imports the worker
def test_arqs_cli_stops_with_one_line_naming_poolq_worker(redis_server, tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "POOLQ_REDIS_URL": redis_server.url,
        "POOLQ_QDRANT_PATH": str(tmp_path / "qdrant"),
    }
    arq_cli = Path(sys.executable).parent / "arq"
    out = subprocess.run(
        [str(arq_cli), "poolq.worker.app.WorkerSettings"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert out.returncode == 1, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "`poolq worker`" in last, out.stderr
    assert "Traceback" not in out.stderr
