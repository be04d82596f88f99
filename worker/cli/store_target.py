"""The store a command opens itself (``poolq export``, ``poolq import``): exactly one of an
embedded folder (``--qdrant-path``) or a Qdrant server (``--qdrant-url``), and its one-line
errors. Qdrant's client and Qdrant Edge load only when a command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from poolq.worker.cli.options import fail


def qdrant_path_option() -> Any:
    return typer.Option(None, "--qdrant-path", help="Embedded Qdrant (Edge) folder.")


def qdrant_url_option() -> Any:
    return typer.Option(
        None,
        "--qdrant-url",
        help="Qdrant server: grpc://HOST:PORT, or http(s)://HOST:PORT (gRPC on port 6334 of "
        "that host; the setting qdrant_transport = rest keeps it on REST).",
    )


def qdrant_api_key_option() -> Any:
    return typer.Option(None, "--qdrant-api-key", help="API key of a Qdrant server.")


def open_target(
    command: str,
    path: Path | None,
    url: str | None,
    api_key: str | None,
    *,
    local_mode_ok: bool = False,
    must_exist: bool = False,
) -> Any:
    """The open store, or a one-line error and exit status 2."""
    from poolq.sinks.store import open_store
    from poolq.sinks.store.errors import NotAStoreError, StoreLockedError

    if (path is None) == (url is None):
        fail(command, "give exactly one of --qdrant-path DIR or --qdrant-url URL")
    if path is not None and must_exist and not path.is_dir():
        fail(command, f"no embedded Qdrant folder at {str(path)!r}")
    from poolq.worker.config.loader import load_values

    try:
        chosen = load_values(("qdrant_transport", "qdrant_grpc_port"))
        transport = chosen.get("qdrant_transport", "grpc")
        grpc_port = chosen.get("qdrant_grpc_port")
        if url is not None:  # the protocol answers, before the store is opened (one line)
            from poolq.sinks.store.probe import check_speaks_qdrant
            from poolq.sinks.store.server_target import server_target

            check_speaks_qdrant(server_target(url, transport, grpc_port), api_key)
        return open_store(
            url=url,
            path=path,
            api_key=api_key,
            local_mode_ok=local_mode_ok,
            transport=transport,
            grpc_port=grpc_port,
        )
    except (StoreLockedError, NotAStoreError, ValueError, OSError) as e:
        fail(command, e)
