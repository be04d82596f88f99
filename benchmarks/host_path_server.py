"""The server path of ``bench_host_path.py --server``: a worker writing over gRPC to the Qdrant
endpoint (``tests/support/qdrant_endpoint``, started here), beside a worker on the embedded store,
and what each process, and each role of thread inside the worker, spends per chunk.

Thread roles are read from ``/proc/<pid>/task/*`` by the names the worker gives its threads
(``worker/engine/execution/thread_names.py``): ``poolq-compute`` (every forward and its pooling, with
OpenMP's team), the main thread (the event loop), ``poolq-io`` (``asyncio.to_thread``:
chunking), ``poolq-tokenize``, ``poolq-model`` (the engine's scheduler), ``poolq-store`` and
``poolq-read`` (the store's threads: encoding and sending upserts, the store's reads), gRPC's
own threads, and anything else. The endpoint's
CPU is printed but not counted: on a real deployment the server runs on another machine.

Also measured in this process on the same points: encoding and sending the upserts through
``GrpcStore`` to the endpoint (CPU of this whole process: gRPC's threads included), and, with
no server, what qdrant-client spends building the same upserts as gRPC messages and as REST
JSON bodies.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from poolq.sinks.points import PointRecord, to_point_struct
from poolq.sinks.schema import CollectionSchema

GRPC_THREADS = ("grpc", "event_engine", "lifeguard", "default-executo", "resolver")


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds of ``pid``'s threads so far, by role (see the module docstring)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    task = Path(f"/proc/{pid}/task")
    for tid in os.listdir(task):
        try:
            comm = (task / tid / "comm").read_text().strip()
            fields = (task / tid / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        seconds = (int(fields[11]) + int(fields[12])) / tick
        if int(tid) == pid:
            role = "event loop"
        elif comm.startswith("poolq-"):
            role = comm.removeprefix("poolq-")
        elif comm.startswith(GRPC_THREADS):
            role = "grpc"
        else:
            role = "other"
        out[role] = out.get(role, 0.0) + seconds
    return out


def upserts_cpu_s(
    points: list[PointRecord], schema: CollectionSchema, url: str, batch_points: int
) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds) to encode and send ``points`` in batches of
    ``batch_points`` through ``GrpcStore`` to the endpoint at ``url``, each acknowledged."""
    from poolq.sinks.store import open_store

    store = open_store(url=url)
    try:
        store.create_collection("upserts", schema)
        store.upsert_records("upserts", points[:batch_points])  # warm: channel, caches
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(0, len(points), batch_points):
            store.upsert_records("upserts", points[i : i + batch_points])
        return time.process_time() - c0, time.perf_counter() - t0
    finally:
        store.delete_collection("upserts")
        store.close()


def rest_bodies_s(points: list[PointRecord], batch_points: int) -> float:
    """Seconds for qdrant-client's REST path to build its upsert bodies for ``points``: the
    writer's point structs, as lists (``ClientStore.upsert``), then qdrant-client's JSON."""
    from qdrant_client import models
    from qdrant_client.http.api.points_api import jsonable_encoder

    from poolq.sinks.store import uint8_codec

    t0 = time.perf_counter()
    for i in range(0, len(points), batch_points):
        structs = [to_point_struct(r, arrays_ok=True) for r in points[i : i + batch_points]]
        structs = uint8_codec.encode_points(structs, frozenset(), arrays_ok=False)
        jsonable_encoder(models.PointsList(points=structs))
    return time.perf_counter() - t0
