"""arq is in maintenance mode and poolq overrides three of its private methods, in one module
(``worker/reliability/arq_overrides.py``). These tests fail when the arq internals that the
overrides rely on change, and check that ``arq poolq.worker.app.WorkerSettings`` and
``poolq worker`` build the same worker."""

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
from poolq.worker.reliability import arq_overrides
from poolq.worker.reliability.arq_overrides import ARQ_TESTED, OVERRIDDEN, PoolqWorker

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
    # _poll_iteration is awaited by main's poll loop; run_job is started per job id
    assert "await self._poll_iteration()" in inspect.getsource(Worker.main)
    assert "self.run_job(" in inspect.getsource(Worker.start_jobs)
    # finish_failed_job: jobs failed without running (expired / max tries / unknown function)
    assert src.count("self.finish_failed_job(job_id, ") >= 2
    # running_worker(): arq awaits on_startup(ctx) inside the main() task
    assert "await self.on_startup(self.ctx)" in inspect.getsource(Worker.main)
    assert "self.loop.create_task(self.main())" in inspect.getsource(Worker.run)
    assert "self.loop.create_task(self.main())" in inspect.getsource(Worker.async_run)
    # the reaper reads these public attributes
    w = Worker(functions=[func(_noop, name="noop")], redis_settings=redis_settings("redis://x"))
    for attr in ("queue_name", "in_progress_timeout_s", "functions", "jobs_complete"):
        assert hasattr(w, attr), attr


async def _noop(ctx):
    return None


async def test_arqs_own_worker_becomes_a_poolq_worker_in_on_startup(redis_server):
    """As ``arq poolq.worker.app.WorkerSettings`` runs it: arq constructs its own Worker from a
    settings class; on_startup adopts it (class, listeners) and puts it in ctx."""
    seen: dict = {}

    async def on_startup(ctx):
        seen["adopted"] = arq_overrides.adopt_running(ctx)
        seen["ctx_worker"] = ctx.get("arq_worker")

    settings_cls = type(
        "S",
        (),
        {
            "functions": [func(_noop, name="noop")],
            "redis_settings": redis_settings(redis_server.url),
            "on_startup": on_startup,
            "burst": True,
            "poll_delay": 0.01,
        },
    )
    worker = create_worker(settings_cls)
    assert type(worker) is Worker
    await worker.async_run()
    await worker.close()
    assert seen["adopted"] is worker and seen["ctx_worker"] is worker
    assert type(worker) is PoolqWorker and worker.failed_unrun == []


def test_adopt_refuses_a_foreign_worker_subclass():
    class Other(Worker):
        pass

    w = Other(functions=[func(_noop, name="noop")], redis_settings=redis_settings("redis://x"))
    with pytest.raises(TypeError, match="expected arq's Worker"):
        arq_overrides.adopt(w)


async def test_running_worker_is_none_outside_arq():
    assert arq_overrides.running_worker() is None


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


def test_poolq_worker_puts_itself_in_ctx_with_no_stack_lookup(monkeypatch):
    """``poolq worker`` builds a PoolqWorker: on_startup finds it in ctx; the frame lookup (only
    for arq's own CLI) is never used."""

    def no_lookup():
        raise AssertionError("running_worker() called for a PoolqWorker")

    monkeypatch.setattr(arq_overrides, "running_worker", no_lookup)
    w = PoolqWorker(
        functions=[func(_noop, name="noop")], redis_settings=redis_settings("redis://x")
    )
    assert w.ctx["arq_worker"] is w
    assert arq_overrides.adopt_running(w.ctx) is w and type(w) is PoolqWorker


# arq's start_jobs, whose claim PoolqWorker._start_one does in one script: when this changes,
# re-check _start_one (semaphore, job_counter, the checks of the transaction, tasks, callback)
START_JOBS_SHA256 = {
    "5aedb54406884838041c6cdf44b00aba072fc79b22ffd2a71f93f0459c3c7b0d",  # 0.26.x (List[bytes])
    "8584f5950a396dcb244911a35b40d63f6985fbd0523ea358ee49e7028b12e316",  # 0.27.0, 0.28.0
}


def _start_jobs_digest() -> str:
    import hashlib

    src = inspect.getsource(Worker.start_jobs)
    body = "\n".join(line.strip() for line in src.splitlines() if line.strip())
    return hashlib.sha256(body.encode()).hexdigest()


def test_arqs_start_jobs_is_the_one_start_one_reproduces():
    assert _start_jobs_digest() in START_JOBS_SHA256, (
        "arq's Worker.start_jobs changed: re-check PoolqWorker._start_one (arq_overrides.py)"
    )


async def test_a_job_starts_in_one_round_trip_only_when_due_queued_and_not_running(redis_server):
    """``_start_one``: a due, queued job not running anywhere is marked in progress (with arq's
    TTL) and started, in one command; one whose mark is set, one gone from the queue and one
    deferred are left alone, with arq's counter and semaphore as they were."""
    from arq.connections import create_pool
    from arq.constants import in_progress_key_prefix

    pool = await create_pool(redis_settings(redis_server.url))
    w = PoolqWorker(functions=[func(_wait_forever, name="wait")], redis_pool=pool, queue_name="q")
    try:
        for job_id in ("ready", "marked", "gone"):
            await pool.enqueue_job("wait", _job_id=job_id, _queue_name="q")
        await pool.enqueue_job(
            "wait",
            _job_id="later",
            _queue_name="q",
            _defer_until=datetime.now(UTC) + timedelta(hours=1),
        )
        await pool.set(in_progress_key_prefix + "marked", b"1")
        await pool.zrem("q", "gone")
        before = await _calls(pool)
        assert isinstance(await w._start_one("ready"), int)
        after = await _calls(pool)
        sent = {k: after.get(k, 0) - before.get(k, 0) for k in ("eval", "watch", "multi", "exec")}
        assert sent == {"eval": 1, "watch": 0, "multi": 0, "exec": 0}  # one round trip
        for job_id in ("marked", "gone", "later"):
            assert await w._start_one(job_id) is None, job_id
        assert sorted(w.tasks) == ["ready"]
        assert w.job_counter == 1 and w.sem._value == w.max_jobs  # arq: max_jobs + 1 permits
        ttl_ms = await pool.pttl(in_progress_key_prefix + "ready")
        assert 0.9 * w.in_progress_timeout_s * 1000 < ttl_ms <= w.in_progress_timeout_s * 1000
        assert await w._start_one("ready") is None  # its mark is set now
    finally:
        for t in w.tasks.values():
            t.cancel()
        await asyncio.gather(*w.tasks.values(), return_exceptions=True)
        await pool.aclose()


async def _calls(pool) -> dict[str, int]:
    stats = await pool.info("commandstats")
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}


async def test_a_start_redis_refuses_leaves_the_job_queued_as_arq_does(redis_server):
    """arq treats a refused transaction (``ResponseError``: out of memory, a read-only replica)
    as a job started elsewhere; the one-script start does the same, its counter and semaphore
    as they were, the poll going on."""
    from arq.connections import create_pool

    pool = await create_pool(redis_settings(redis_server.url))
    w = PoolqWorker(functions=[func(_wait_forever, name="wait")], redis_pool=pool, queue_name="q")
    try:
        await pool.enqueue_job("wait", _job_id="oom", _queue_name="q")
        await pool.config_set("maxmemory", "1")  # every write refused: OOM
        try:
            assert await w._start_one("oom") is None
        finally:
            await pool.config_set("maxmemory", "0")
        assert w.tasks == {} and w.job_counter == 0 and w.sem._value == w.max_jobs + 1
        assert await pool.zscore("q", "oom") is not None  # still queued
    finally:
        await pool.aclose()
