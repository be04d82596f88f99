"""Where a Qdrant server is and how poolq talks to it, from its URL and two settings.

* ``grpc://HOST:PORT`` (``grpcs://`` with TLS): gRPC on that port, for everything;
* ``http://HOST[:PORT]`` (``https://``): gRPC on ``grpc_port`` of that host (Qdrant's 6334
  unless told otherwise) for everything, the REST port kept for qdrant-client's own checks;
* ``transport = "rest"`` with an ``http(s)://`` URL keeps everything on REST (JSON): what a
  server behind a proxy that passes only HTTP/1.1 needs (``POOLQ_QDRANT_TRANSPORT=rest``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

DEFAULT_GRPC_PORT = 6334  # Qdrant's
DEFAULT_REST_PORT = 6333
SCHEMES = ("http", "https", "grpc", "grpcs")
TRANSPORTS = ("grpc", "rest")
Transport = Literal["grpc", "rest"]


@dataclass(frozen=True)
class ServerTarget:
    host: str
    rest_port: int | None  # None: a grpc:// URL names no REST port
    grpc_port: int
    tls: bool
    transport: Transport

    @property
    def shown(self) -> str:
        """Where it is, without credentials: ``grpc://host:6334`` or ``http://host:6333``."""
        if self.transport == "rest":
            return f"{'https' if self.tls else 'http'}://{self.host}:{self.rest_port}"
        return f"{'grpcs' if self.tls else 'grpc'}://{self.host}:{self.grpc_port}"


def server_target(url: str, transport: str = "grpc", grpc_port: int | None = None) -> ServerTarget:
    """Parse ``url`` (see the module docstring); ``ValueError`` naming what is wrong."""
    if transport not in TRANSPORTS:
        raise ValueError(f"qdrant_transport: expected one of {TRANSPORTS}, got {transport!r}")
    if grpc_port is not None and not 1 <= grpc_port <= 65535:
        raise ValueError(f"qdrant_grpc_port: expected a port in 1..65535, got {grpc_port}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES or not parts.hostname:
        raise ValueError(
            "qdrant_url: expected an http://, https://, grpc:// or grpcs:// URL of a Qdrant "
            f"server, got scheme {parts.scheme!r}"
        )
    tls = scheme in ("https", "grpcs")
    if scheme.startswith("grpc"):
        if transport == "rest":
            raise ValueError("qdrant_transport = 'rest' needs an http:// or https:// URL")
        if grpc_port is not None:
            raise ValueError("qdrant_grpc_port is for an http(s):// URL: a grpc:// URL names it")
        return ServerTarget(parts.hostname, None, parts.port or DEFAULT_GRPC_PORT, tls, "grpc")
    return ServerTarget(
        parts.hostname,
        parts.port or DEFAULT_REST_PORT,
        grpc_port or DEFAULT_GRPC_PORT,
        tls,
        "rest" if transport == "rest" else "grpc",
    )
