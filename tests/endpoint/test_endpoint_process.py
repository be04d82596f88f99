"""The endpoint as a process: the one line it prints, 127.0.0.1 only, a clean stop on SIGINT
and SIGTERM (exit 0, calls in flight finished or refused, the folder's lock released), and
acknowledged writes surviving SIGKILL: restarted on the same folder and port, every point is
there, bit for bit."""

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from poolq.sinks.collections import ensure_collection
from poolq.sinks.store.edge import EdgeStore
from tests.endpoint.conftest import client_store, connect, points, schema
from tests.support.endpoint_process import EndpointProcess, endpoint_env

pytestmark = pytest.mark.slow


def listening_addresses(port: int) -> list[str]:
    """Linux: the local addresses (hex, as in /proc/net/tcp) listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.append(address)
    return found


def test_one_line_local_only_and_a_clean_stop(tmp_path):
    folder = tmp_path / "data"
    cmd = [sys.executable, "-m", "tests.support.qdrant_endpoint", "--path", str(folder)]
    proc = subprocess.Popen(
        [*cmd, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=endpoint_env()
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        found = re.fullmatch(
            r"qdrant endpoint listening on 127\.0\.0\.1:(\d+) \(path (.+)\)\n", line
        )
        assert found and found.group(2) == str(folder), line
        port = int(found.group(1))
        if Path("/proc/net/tcp").exists():
            # 127.0.0.1 (or ::ffff:127.0.0.1 on a dual-stack socket), nothing else
            local = {"0100007F", "0000000000000000FFFF00000100007F"}
            assert listening_addresses(port) and set(listening_addresses(port)) <= local
        client = connect(port)
        assert client.info().version and client.get_collections().collections == []
        client.close()
        # the folder is held, and so is the port: a second endpoint says so and exits 1
        for path, other_port, why in (
            (folder, "0", b"held by another process"),
            (tmp_path / "other", str(port), b"cannot listen"),
        ):
            second = subprocess.run(
                [*cmd[:-1], str(path), "--port", other_port],
                capture_output=True,
                timeout=60,
                env=endpoint_env(),
            )
            assert second.returncode == 1 and second.stdout == b"" and why in second.stderr
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()
    assert out == b""  # the one line was all
    EdgeStore(folder).close()  # its lock was released


def test_acknowledged_writes_survive_sigkill(tmp_path):
    ep = EndpointProcess(tmp_path / "data").start()
    try:
        store = client_store(ep.port)
        ensure_collection(store, schema("k", multivector_datatype="uint8"))
        written = points(300, seed=6)
        for i in range(0, len(written), 50):
            store.upsert("k", written[i : i + 50])  # acknowledged: wait=True
        store.switch_alias("live", "k")
        ids = [str(p.id) for p in written]
        before = {str(r.id): r for r in store.retrieve("k", ids, with_vectors=True)}
        store.close()
        port = ep.port
        ep.kill()  # no clean stop: only Edge's WAL has them
        assert ep.restart().port == port
        store = client_store(ep.port)
        assert store.count("live") == 300 and store.aliases() == {"live": "k"}
        after = {str(r.id): r for r in store.retrieve("live", ids, with_vectors=True)}
        assert set(after) == set(before)
        for pid, r in after.items():
            assert r.payload == before[pid].payload
            for name in ("dense", "colbert"):
                assert np.array_equal(r.vector[name], before[pid].vector[name])
        store.close()
    finally:
        assert ep.stop() == 0


def test_sigterm_finishes_calls_in_flight(tmp_path):
    """Upserts run while SIGTERM arrives: the endpoint exits 0, and after a restart the folder
    holds every acknowledged batch (and at most the one whose answer was lost)."""
    ep = EndpointProcess(tmp_path / "data").start()
    store = client_store(ep.port)
    ensure_collection(store, schema("w"))
    written = points(4000, seed=7)
    batches = [written[i : i + 20] for i in range(0, len(written), 20)]
    acked: list[int] = []

    def write() -> None:
        for i, batch in enumerate(batches):
            try:
                store.upsert("w", batch)
            except Exception:
                return
            acked.append(i)

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(1.0)
    assert ep.stop() == 0  # SIGTERM
    writer.join(60)
    store.close()
    assert acked, "no write was acknowledged before the stop"
    ep.restart()
    try:
        again = client_store(ep.port)
        n = again.count("w")
        assert len(acked) * 20 <= n <= (len(acked) + 1) * 20
        again.close()
    finally:
        assert ep.stop() == 0
