"""The embedded store's shards (``edge.py``): a folder's collections, opened on first use by
name, the background upkeep of their indexes, and closing. One open shard is ``edge_shard.py``.

Threads: the writer's own thread writes, a read thread searches, a maintenance thread builds
indexes; Edge serves updates, queries and ``optimize()`` concurrently, so each of them holds its
shard's lock shared (:meth:`EdgeShards._using`). Closing, reloading and dropping a shard hold it
exclusively: a search running while a full rebuild drops the old shard finishes on it; one that
starts after reads the new shard.

Indexes: Edge builds them only in ``optimize()``. After every ``optimize_every`` points written
to a shard, :meth:`EdgeShards.maintain` optimizes it in the background (dense HNSW, sparse index,
on-disk multi-vectors), then reopens it: Edge 0.9 keeps the segments an optimization replaced
mapped (and their pages resident) until the shard is closed. Closing also drops the shard's files
from the page cache, so after opening, everything but the multi-vectors (which stay on disk, read
only to rerank) is read ahead again (``edge_shard.warm``). A shard created with
``defer_indexing`` (a full rebuild) is only indexed by :meth:`EdgeShards.finish_build`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import qdrant_edge as qe
from qdrant_client import models

from poolq.sinks.store import edge_params as ep
from poolq.sinks.store.edge_catalog import Catalog
from poolq.sinks.store.edge_shard import (
    Shard,
    edge_errors,
    enable_wal,
    indexing_deferred,
    warm,
)
from poolq.sinks.store.errors import EdgeError

log = logging.getLogger("poolq.sinks.store.edge")


class CollectionNotFoundError(ValueError):
    """No collection (or alias) of that name in the folder."""


class EdgeShards:
    """The shards of one Qdrant Edge folder, by collection name (the base of ``EdgeStore``)."""

    def __init__(self, path: str | Path, *, optimize_every: int = 8192) -> None:
        self.path = Path(path)
        self.optimize_every = optimize_every
        self._catalog = Catalog(self.path)
        self._mutex = threading.Lock()  # the catalog and the open shards
        self._open: dict[str, Shard] = {}
        self._maintenance: threading.Thread | None = None
        self.optimizations = 0

    # -- shards ------------------------------------------------------------------------------

    def _missing(self, name: str) -> str:
        return f"collection {name!r} not found in the Qdrant Edge folder {str(self.path)!r}"

    def _shard(self, name: str) -> Shard:
        """The open shard ``name`` (a collection or an alias) names, opened on first use."""
        with self._mutex:
            physical = self._catalog.aliases.get(name, name)
            if physical not in self._catalog.collections:
                raise CollectionNotFoundError(self._missing(name))
            sh = self._open.get(physical)
            if sh is None:
                folder = self._catalog.folder(physical)
                with edge_errors(f"opening {physical!r}"):
                    shard = qe.EdgeShard.load(str(folder))
                deferred = indexing_deferred(folder)
                sh = self._open[physical] = Shard(physical, folder, shard, deferred=deferred)
                warm(folder)
            return sh

    @contextmanager
    def _using(self, name: str) -> Iterator[Shard]:
        """The shard, held shared; if it was dropped meanwhile, whatever ``name`` names now."""
        while True:
            sh = self._shard(name)
            with sh.lock.shared():
                if sh.shard is not None:
                    yield sh
                    return

    def collection_params(self, name: str) -> models.CollectionParams:
        sh = self._shard(name)
        path = sh.folder / "edge_config.json"
        try:
            return ep.params_from_config_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            raise EdgeError(f"cannot read the configuration {str(path)!r}: {e}") from None

    # -- indexes and lifecycle -----------------------------------------------------------------

    def finish_build(self, name: str) -> None:
        self._optimize(self._reload(name, defer_indexing=False))

    def _reload(self, name: str, *, defer_indexing: bool) -> Shard:
        """Close the shard and load it with its own parameters, indexing deferred or not (a
        shard created without a WAL gets it back when indexing is turned on)."""
        sh = self._shard(name)
        params = self.collection_params(name)
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        sparse = dict(params.sparse_vectors or {})
        config = ep.edge_config(vectors, sparse, defer_indexing=defer_indexing)
        with sh.lock.exclusive(), edge_errors(f"reloading {name!r}"):
            sh.shard.close()  # segments flushed: a bulk load is on disk from here
            if sh.unlogged and not defer_indexing:
                enable_wal(sh.folder)
                sh.unlogged = False
            sh.shard = qe.EdgeShard.load(str(sh.folder), config)
            sh.deferred = defer_indexing
        return sh

    def maintain(self) -> None:
        """Optimize, in the background, one shard that took ``optimize_every`` points (a shard
        whose indexing is deferred is only reopened, to return its pages)."""
        if self._maintenance is not None and self._maintenance.is_alive():
            return
        with self._mutex:
            due = [s for s in self._open.values() if s.written >= self.optimize_every]
        if due:
            self._maintenance = threading.Thread(
                target=self._optimize, args=(due[0],), name="poolq-edge-optimize", daemon=True
            )
            self._maintenance.start()

    def settle(self) -> None:
        if self._maintenance is not None:
            self._maintenance.join()

    def _optimize(self, sh: Shard) -> None:
        """Build the shard's indexes, then reopen it (see the module docstring)."""
        sh.written = 0
        try:
            with sh.lock.shared():
                if sh.shard is None:
                    return
                if not sh.deferred:
                    with edge_errors(f"optimizing {sh.name!r}"):
                        sh.shard.optimize()
            with sh.lock.exclusive():
                if sh.shard is None:
                    return
                with edge_errors(f"reopening {sh.name!r}"):
                    sh.shard.close()
                    sh.shard = qe.EdgeShard.load(str(sh.folder))
            warm(sh.folder)
            self.optimizations += not sh.deferred
        except Exception:
            log.exception("optimizing collection %r failed (searches still work)", sh.name)

    def close(self) -> None:
        self.settle()
        with self._mutex:
            shards, self._open = list(self._open.values()), {}
        for sh in shards:
            with sh.lock.exclusive(), contextlib.suppress(Exception):
                if sh.shard is not None:
                    sh.shard.close()
                sh.shard = None
        self._catalog.close()
