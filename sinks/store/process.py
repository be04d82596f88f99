"""The embedded store in a process of its own: :class:`ProcessStore` forwards every call to a
child process that owns the folder (an :class:`~poolq.sinks.store.edge.EdgeStore`).

Why: converting points for Qdrant Edge (a Python float per multi-vector value) and Edge's
``update`` hold the GIL, ~1-2 ms per point; in the worker's interpreter they serialise with
everything else (chunking, tokenizing, building points, the event loop). In a child they run on
another core while the worker prepares the next batch.

Protocol: one pipe per calling role (writes: the store thread; reads: the read thread; builds:
``finish_build``'s own thread), each served by a thread of the child, in order. A call is
``(method, args, kwargs)`` and a reply ``(status, value)``, both msgpack (``process_codec.py``:
numpy vectors travel as raw buffers, not lists; never pickle). The pipes join this process and
its own child only, never anything another user can write to.

Durability is the embedded store's: :meth:`upsert` returns once the child's ``update``
returned, i.e. once the points are in the WAL. A child that dies (out of memory, killed) is
started again on the next call; the call it was serving fails with a transient error, which the
writer retries. The child dies with the worker (Linux
``PR_SET_PDEATHSIG``; elsewhere when its pipes close): a write the worker never saw
acknowledged may or may not be in the WAL, as when the store ran in the worker itself.
The child ignores SIGINT/SIGTERM: the worker drains its jobs, then closes the store.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from qdrant_client import models

from poolq.sinks.points import PointRecord
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.store.errors import EdgeError
from poolq.sinks.store.interface import Selector, Store
from poolq.sinks.store.process_codec import pack, unpack

ROLES = ("write", "read", "build")  # one pipe each (see above)
_READS = frozenset(
    {"collections", "aliases", "resolve", "exists", "collection_params", "count", "retrieve",
     "scroll", "query"}
)  # fmt: skip
_START_TIMEOUT_S = 120.0
log = logging.getLogger(__name__)


class StoreProcessLostError(ConnectionError):
    """The store process exited during a call (transient: the next call starts a new one, and
    the writer retries, which is safe since point ids are deterministic)."""


class ProcessStore(Store):
    """An :class:`EdgeStore` of ``path`` served by a child process (see the module docstring)."""

    accepts_arrays = True
    concurrent_reads = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._locks = {role: threading.Lock() for role in ROLES}
        self._restart_lock = threading.Lock()
        self._closed = False
        self._start()

    def _start(self) -> None:
        """Start the child and wait until it has opened the folder (or failed to)."""
        # a fresh interpreter running this module (not multiprocessing's spawn, which would
        # import the caller's main script again), its pipes passed as file descriptors
        pairs = {role: socket.socketpair() for role in ROLES}
        fds = {role: theirs.fileno() for role, (_, theirs) in pairs.items()}
        argv = [str(self.path), json.dumps(fds), str(os.getpid())]
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "poolq.sinks.store.process_child", *argv],
            pass_fds=tuple(fds.values()),
            stdin=subprocess.DEVNULL,
        )
        for _, theirs in pairs.values():
            theirs.close()  # the child's ends live in the child only: EOF when it exits
        self._conns = {role: Connection(ours.detach()) for role, (ours, _) in pairs.items()}
        conn = self._conns["write"]
        try:
            if not conn.poll(_START_TIMEOUT_S):
                raise EOFError
            status, value = unpack(conn.recv_bytes())
        except (EOFError, OSError):
            self._kill()
            raise EdgeError(
                f"the store process for {str(self.path)!r} did not start "
                f"(exit code {self._proc.returncode})"
            ) from None
        if status != "ok":
            self._kill()
            raise value

    def __repr__(self) -> str:
        return f"ProcessStore({str(self.path)!r}, pid {self._proc.pid})"

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        role = "read" if method in _READS else "build" if method == "finish_build" else "write"
        with self._locks[role]:
            if self._closed:
                raise EdgeError(f"{self!r} is closed")
            proc = self._proc
            if proc.poll() is not None:
                self._restart(proc)
            try:
                conn = self._conns[role]
                conn.send_bytes(pack((method, args, kwargs)))
                status, value = unpack(conn.recv_bytes())
            except (EOFError, OSError) as e:
                raise StoreProcessLostError(
                    f"the store process of {str(self.path)!r} exited "
                    f"(exit code {proc.poll()}) during {method}: {e!r}; it is started again "
                    "on the next call"
                ) from None
        if status != "ok":
            raise value
        return value

    def _restart(self, dead: subprocess.Popen[bytes]) -> None:
        """A child that died (killed, out of memory) is replaced by a new one, which opens the
        folder again (Edge replays its WAL). Calls other threads had in flight on the old pipes
        fail with :class:`StoreProcessLostError`, a transient error: the writer retries them."""
        with self._restart_lock:
            if self._proc is not dead:  # another thread restarted it already
                return
            log.error("the store process %s exited (%s): starting it again", dead.pid, dead.poll())
            for conn in self._conns.values():
                conn.close()
            self._start()

    # -- names -------------------------------------------------------------------------------

    def collections(self) -> list[str]:
        return self._call("collections")

    def aliases(self) -> dict[str, str]:
        return self._call("aliases")

    def resolve(self, name: str) -> str:
        return self._call("resolve", name)

    def exists(self, name: str) -> bool:
        return self._call("exists", name)

    def switch_alias(self, alias: str, target: str) -> None:
        self._call("switch_alias", alias, target)

    # -- collections -------------------------------------------------------------------------

    def create_collection(
        self, name: str, schema: CollectionSchema, *, defer_indexing: bool = False
    ) -> bool:
        return self._call("create_collection", name, schema, defer_indexing=defer_indexing)

    def finish_build(self, name: str) -> None:
        self._call("finish_build", name)

    def collection_params(self, name: str) -> models.CollectionParams:
        return self._call("collection_params", name)

    def ensure_payload_indexes(self, name: str) -> None:
        self._call("ensure_payload_indexes", name)

    def delete_collection(self, name: str) -> None:
        self._call("delete_collection", name)

    # -- points ------------------------------------------------------------------------------

    def upsert(self, collection: str, points: Sequence[models.PointStruct]) -> None:
        # plain tuples: numpy vectors travel as buffers; a pydantic point is slower to encode
        parts = [(p.id, p.vector, p.payload) for p in points]
        self._call("upsert_parts", collection, parts)

    def upsert_records(self, collection: str, records: Sequence[PointRecord]) -> None:
        """The writer's records as ``(id, vectors, payload)`` tuples: dense, multi and sparse
        arrays travel as buffers and arrive as arrays (``process_codec.py``)."""
        self._call("upsert_parts", collection, [(r.id, r.vectors, r.payload) for r in records])

    def delete(self, collection: str, selector: Selector) -> None:
        self._call("delete", collection, selector)

    def set_payload(self, collection: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        self._call("set_payload", collection, list(ids), payload)

    def count(self, collection: str, flt: models.Filter | None = None) -> int:
        return self._call("count", collection, flt)

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        *,
        with_payload: bool | Sequence[str] = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> list[models.Record]:
        return self._call(
            "retrieve", collection, list(ids), with_payload=with_payload, with_vectors=with_vectors
        )

    def scroll(
        self,
        collection: str,
        *,
        limit: int,
        offset: Any = None,
        flt: models.Filter | None = None,
        with_payload: bool | Sequence[str] = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> tuple[list[models.Record], Any]:
        return self._call(
            "scroll",
            collection,
            limit=limit,
            offset=offset,
            flt=flt,
            with_payload=with_payload,
            with_vectors=with_vectors,
        )

    def query(self, request: dict[str, Any]) -> list[models.ScoredPoint]:
        return self._call("query", request)

    def query_groups(self, request: dict[str, Any]) -> list[models.PointGroup]:
        return self._call("query_groups", request)

    # -- lifecycle ---------------------------------------------------------------------------

    def maintain(self) -> None:
        self._call("maintain")

    def settle(self) -> None:
        self._call("settle")

    def close(self) -> None:
        if self._closed:
            return
        if self._proc.poll() is None:  # (a dead child is not started again to be closed)
            with contextlib.suppress(EdgeError, StoreProcessLostError):
                self._call("close")
        self._closed = True
        for conn in self._conns.values():
            conn.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # pragma: no cover - a wedged child
            self._kill()

    def _kill(self) -> None:
        self._proc.kill()
        self._proc.wait()
        for conn in self._conns.values():
            conn.close()
