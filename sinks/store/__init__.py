"""The store interface (``interface.py``), its backends (``edge.py`` over Qdrant Edge, the embedded
default; ``server.py``, a Qdrant server over gRPC; ``client.py`` over qdrant-client, a server
over REST when chosen) and the one place that picks a backend from a URL or a folder
(:func:`store_factory`; URLs: ``server_target.py``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from poolq.sinks.store.errors import NotAStoreError
from poolq.sinks.store.interface import Store
from poolq.sinks.store.server_target import server_target

__all__ = ["Store", "check_folder", "open_store", "store_factory"]


def store_factory(
    url: str | None = None,
    path: str | Path | None = None,
    api_key: str | None = None,
    *,
    local_mode_ok: bool = False,
    process: bool = False,
    transport: str = "grpc",
    grpc_port: int | None = None,
    writes_in_flight: int | None = None,
) -> tuple[Callable[[], Store], str]:
    """The function that opens the store, and a description of it without secrets.

    ``url``: a Qdrant server, over gRPC unless ``transport="rest"`` (``server_target.py``;
    ``grpc_port`` for an http(s):// URL, ``writes_in_flight`` upserts at once, default 4).
    ``path``: an embedded folder, opened with Qdrant Edge; a
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
    target = server_target(url, transport, grpc_port)
    description = f"url={target.shown!r}"

    def make() -> Store:  # a closure: unlike a partial, its repr shows no api key
        if target.transport == "grpc":
            from poolq.sinks.store.server import DEFAULT_WRITES_IN_FLIGHT, GrpcStore

            n = DEFAULT_WRITES_IN_FLIGHT if writes_in_flight is None else writes_in_flight
            return GrpcStore(target, api_key, writes_in_flight=n)
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
    transport: str = "grpc",
    grpc_port: int | None = None,
) -> Store:
    """Open a store now (in this thread); see :func:`store_factory`."""
    factory, _ = store_factory(
        url, path, api_key, local_mode_ok=local_mode_ok, transport=transport, grpc_port=grpc_port
    )
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
