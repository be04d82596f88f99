"""The embedded store served by a child process (``sinks/store/process.py``): every call gives
what the same call on an in-process Qdrant Edge store gives, errors cross with their type and
message, the folder stays one process's, and the child never outlives the worker."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from multiprocessing.connection import Connection

import numpy as np
import pytest
from qdrant_client import models

from poolq.sinks.store import open_store
from poolq.sinks.store.edge import CollectionNotFoundError, EdgeStore
from poolq.sinks.store.errors import StoreLockedError, is_transient
from poolq.sinks.store.process import ProcessStore, StoreProcessLostError
from tests.sinks.test_edge_store import SCHEMA, points

pytestmark = pytest.mark.slow  # starts a process


def _same(a, b):
    assert [r.id for r in a] == [r.id for r in b]
    for x, y in zip(a, b, strict=True):
        assert x.payload == y.payload
        assert set(x.vector) == set(y.vector)
        for name in x.vector:
            np.testing.assert_array_equal(np.asarray(x.vector[name]), np.asarray(y.vector[name]))


def test_calls_match_the_in_process_store(tmp_path):
    pts = points(20, seed=3)
    ids = [p.id for p in pts]
    ref = EdgeStore(tmp_path / "ref")
    proc = ProcessStore(tmp_path / "proc")
    try:
        for s in (ref, proc):
            assert s.create_collection("c", SCHEMA) is True
            assert s.create_collection("c", SCHEMA) is False
            s.upsert("c", pts[:12])
            s.upsert("c", pts[12:])
            s.maintain()
            s.settle()
            s.switch_alias("a", "c")
        assert proc.collections() == ref.collections() == ["c"]
        assert proc.aliases() == ref.aliases() == {"a": "c"}
        assert proc.count("a") == ref.count("a") == 20
        _same(proc.retrieve("c", ids, with_vectors=True), ref.retrieve("c", ids, with_vectors=True))
        page, _ = proc.scroll("c", limit=50, with_vectors=True)
        ref_page, _ = ref.scroll("c", limit=50, with_vectors=True)
        _same(page, ref_page)
        query = {"collection_name": "c", "query": pts[0].vector["colbert"], "using": "colbert"}
        assert [(h.id, h.score) for h in proc.query(query)] == [
            (h.id, h.score) for h in ref.query(query)
        ]
        assert proc.collection_params("c") == ref.collection_params("c")
        for s in (ref, proc):
            s.delete("c", models.PointIdsList(points=ids[:5]))
            s.set_payload("c", ids[5:6], {"x": 1})
        assert proc.count("c") == ref.count("c") == 15
        assert proc.retrieve("c", ids[5:6])[0].payload["x"] == 1
    finally:
        ref.close()
        proc.close()
    back = EdgeStore(tmp_path / "proc")  # what the child wrote is there for anyone after it
    try:
        assert back.count("c") == 15
    finally:
        back.close()


def test_errors_cross_with_their_type_and_message(tmp_path):
    store = ProcessStore(tmp_path / "s")
    try:
        with pytest.raises(CollectionNotFoundError, match="collection 'nope' not found"):
            store.count("nope")
        with pytest.raises(StoreLockedError, match="held by another process"):
            ProcessStore(tmp_path / "s")  # the folder stays one process's
        with pytest.raises(StoreLockedError, match="held by another process"):
            EdgeStore(tmp_path / "s")
    finally:
        store.close()
    open_store(path=tmp_path / "s").close()  # released on close


def test_a_call_the_child_never_answers_fails_transiently(tmp_path):
    store = ProcessStore(tmp_path / "s")
    try:
        ours, theirs = socket.socketpair()
        theirs.close()  # as if the child died while the call was on its way
        store._conns["write"] = Connection(ours.detach())
        with pytest.raises(
            StoreProcessLostError, match=r"store process .* exited .* during upsert"
        ):
            store.upsert("c", points(1))
        assert is_transient(StoreProcessLostError("x"))  # the writer's retry policy retries it
    finally:
        store.close()


def test_a_dead_child_is_started_again(tmp_path):
    store = ProcessStore(tmp_path / "s")
    try:
        store.create_collection("c", SCHEMA)
        store.upsert("c", points(3))
        first = store._proc.pid
        os.kill(first, signal.SIGKILL)
        store._proc.wait()
        store.upsert("c", points(5, start=3))  # a new child, on the same folder
        assert store._proc.pid != first
        assert store.count("c") == 8  # what the first child acknowledged is still there
    finally:
        store.close()


def test_the_child_dies_with_the_worker_and_acknowledged_writes_survive(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from poolq.sinks.store.process import ProcessStore
        from tests.sinks.test_edge_store import SCHEMA, points
        s = ProcessStore({str(tmp_path / "s")!r})
        s.create_collection("c", SCHEMA)
        s.upsert("c", points(30))
        print(s._proc.pid, flush=True)
        time.sleep(60)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    child = int(p.stdout.readline())
    p.kill()
    p.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the store process {child} outlived its worker")
    store = EdgeStore(tmp_path / "s")  # the lock went with it
    try:
        assert store.count("c") == 30
    finally:
        store.close()
