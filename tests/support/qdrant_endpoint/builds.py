"""Vector index building as a server's ``indexing_threshold`` drives it, over Qdrant Edge.

``indexing_threshold = 0`` (at creation or by an update) turns index building off
(``EdgeServerStore.defer_indexing``); a positive threshold afterwards runs
``EdgeStore.finish_build`` in a thread of its own, and the collection reports YELLOW until it
is done, RED with the error if it failed: what ``ClientStore.finish_build`` polls for. Any
other threshold is only remembered, to be reported back (in this process: after a restart it
is Qdrant's default again); it does not change when Edge builds indexes.
"""

from __future__ import annotations

import logging
import threading

from qdrant_client import models

from tests.support.edge_server import EdgeServerStore

log = logging.getLogger(__name__)
DEFAULT_INDEXING_THRESHOLD_KB = 10_000  # Qdrant's


class IndexBuilds:
    def __init__(self, store: EdgeServerStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._thresholds: dict[str, int] = {}  # physical collection -> threshold last set
        self._running: dict[str, threading.Thread] = {}
        self._failed: dict[str, str] = {}  # the error of a build that failed

    def forget(self, name: str) -> None:
        """A collection created or deleted: nothing of an older one of that name."""
        with self._lock:
            self._thresholds.pop(name, None)
            self._failed.pop(name, None)

    def threshold(self, name: str) -> int:
        """The ``indexing_threshold`` to report: 0 while building is off."""
        if self.store.indexing_deferred(name):
            return 0
        with self._lock:
            return self._thresholds.get(name, DEFAULT_INDEXING_THRESHOLD_KB)

    def set_threshold(self, name: str, threshold: int) -> None:
        """Apply a threshold (see the module docstring) to the physical collection ``name``."""
        if threshold == 0:
            self._join(name)
            self.store.defer_indexing(name)
            return
        with self._lock:
            self._thresholds[name] = threshold
        if self.store.indexing_deferred(name):
            self._start(name)

    def status(self, name: str) -> tuple[models.CollectionStatus, models.OptimizersStatus]:
        with self._lock:
            building, failed = name in self._running, self._failed.get(name)
        if failed is not None:
            return models.CollectionStatus.RED, models.OptimizersStatusOneOf1(error=failed)
        if building:
            return models.CollectionStatus.YELLOW, models.OptimizersStatusOneOf.OK
        return models.CollectionStatus.GREEN, models.OptimizersStatusOneOf.OK

    def _start(self, name: str) -> None:
        with self._lock:
            if name in self._running:
                return
            self._failed.pop(name, None)
            thread = threading.Thread(
                target=self._build, args=(name,), name="qdrant-endpoint-build", daemon=True
            )
            self._running[name] = thread
        thread.start()

    def _build(self, name: str) -> None:
        try:
            self.store.finish_build(name)
        except Exception as e:
            log.exception("building the indexes of %r failed", name)
            with self._lock:
                self._failed[name] = f"{type(e).__name__}: {e}"
        finally:
            with self._lock:
                self._running.pop(name, None)

    def _join(self, name: str) -> None:
        with self._lock:
            thread = self._running.get(name)
        if thread is not None:
            thread.join()

    def settle(self) -> None:
        """Wait for the builds under way (before the store closes)."""
        with self._lock:
            threads = list(self._running.values())
        for thread in threads:
            thread.join()
