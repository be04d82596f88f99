"""The store interface (``base.py``), its backends (``edge.py`` over Qdrant Edge, the embedded
default; ``client.py`` over qdrant-client, for a Qdrant server) and the one place that picks a
backend from a URL or a folder (:func:`store_factory`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from poolq.sinks.store.base import Store
from poolq.sinks.store.errors import NotAStoreError

__all__ = ["Store", "check_folder", "open_store", "store_factory"]


def store_factory(
    url: str | None = None,
    path: str | Path | None = None,
    api_key: str | None = None,
    *,
    local_mode_ok: bool = False,
    process: bool = False,
) -> tuple[Callable[[], Store], str]:
    """The function that opens the store, and a description of it without secrets.

    ``url``: a Qdrant server. ``path``: an embedded folder, opened with Qdrant Edge; a
    qdrant-client local-mode folder is refused (with how to move it) unless ``local_mode_ok``
    (``poolq export`` reads one). ``process``: the Qdrant Edge folder is served by a child
    process (``process.py``: conversion and writes off this interpreter; what a worker uses)."""
    if (url is None) == (path is None):
        raise ValueError(
            "a store needs exactly one of url= (a Qdrant server) or path= (an embedded "
            f"local folder), got {'both' if url is not None else 'neither'}"
        )
    if path is not None:
        if api_key is not None:
            raise ValueError("api_key is for a Qdrant server url, not a local path")
        return partial(_open_folder, Path(path), local_mode_ok, process), f"path={str(path)!r}"
    assert url is not None
    parts = urlsplit(url)
    shown = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    description = f"url={shown!r}"

    def make() -> Store:  # a closure: unlike a partial, its repr shows no api key
        from qdrant_client import QdrantClient

        from poolq.sinks.store.client import ClientStore

        return ClientStore(QdrantClient(url=url, api_key=api_key), description=description)

    return make, description


def open_store(
    url: str | None = None,
    path: str | Path | None = None,
    api_key: str | None = None,
    *,
    local_mode_ok: bool = False,
) -> Store:
    """Open a store now (in this thread); see :func:`store_factory`."""
    factory, _ = store_factory(url, path, api_key, local_mode_ok=local_mode_ok)
    return factory()


def _open_folder(path: Path, local_mode_ok: bool, process: bool = False) -> Store:
    from poolq.sinks.store.edge_catalog import is_local_mode_folder, migration_hint

    if is_local_mode_folder(path):
        if not local_mode_ok:
            raise NotAStoreError(migration_hint(path))
        from poolq.sinks.store.client import ClientStore, open_local_mode

        return ClientStore(
            open_local_mode(path), description=f"local mode {str(path)!r}", local=True
        )
    if process:
        from poolq.sinks.store.process import ProcessStore

        return ProcessStore(path)
    from poolq.sinks.store.edge import EdgeStore

    return EdgeStore(path)


def check_folder(path: str | Path) -> None:
    """Fail now, with the one-line reason, if the embedded store at ``path`` cannot be opened
    (a local-mode folder, a folder of something else, one another process holds); creates a
    missing one. For commands to check before they load models."""
    from poolq.sinks.store.edge_catalog import Catalog

    Catalog(path).close()
