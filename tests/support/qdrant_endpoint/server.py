"""The gRPC server: the three services on one port over one ``EdgeServerStore``, the health
check, the optional api key, and a clean stop (calls in flight finish, then the store closes
and its folder lock is released)."""

from __future__ import annotations

import hmac
import importlib.metadata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from qdrant_client import grpc as qgrpc
from qdrant_client.grpc.collections_service_pb2_grpc import add_CollectionsServicer_to_server
from qdrant_client.grpc.points_service_pb2_grpc import add_PointsServicer_to_server
from qdrant_client.grpc.qdrant_pb2_grpc import QdrantServicer, add_QdrantServicer_to_server

from tests.support.edge_server import EdgeServerStore
from tests.support.qdrant_endpoint.collections import CollectionsService
from tests.support.qdrant_endpoint.points import PointsService

DEFAULT_WORKERS = 8
STOP_GRACE_S = 10.0  # calls in flight get this long to finish when the endpoint stops
_OPTIONS = [
    ("grpc.max_send_message_length", -1),  # as qdrant-client's channel: no limit
    ("grpc.max_receive_message_length", -1),
    ("grpc.so_reuseport", 0),  # a port another process holds is an error, not shared
]


class HealthService(QdrantServicer):
    def HealthCheck(self, request: Any, context: Any) -> qgrpc.HealthCheckReply:
        # the protocol version spoken: the one of the qdrant-client whose .proto files it serves
        version = importlib.metadata.version("qdrant-client")
        return qgrpc.HealthCheckReply(title="poolq qdrant endpoint (Qdrant Edge)", version=version)


class ApiKeyCheck(grpc.ServerInterceptor):
    """Every call must carry the key (``api-key`` metadata, or ``authorization: Bearer``)."""

    def __init__(self, key: str) -> None:
        self.accepted = (key.encode(), f"Bearer {key}".encode())

        def deny(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "Invalid api-key")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        for key, value in handler_call_details.invocation_metadata or ():
            if key in ("api-key", "authorization"):
                given = value.encode() if isinstance(value, str) else value
                if any(hmac.compare_digest(given, ok) for ok in self.accepted):
                    return continuation(handler_call_details)
        return self._deny


@dataclass
class Endpoint:
    server: grpc.Server
    store: EdgeServerStore
    collections: CollectionsService
    host: str
    port: int

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop taking calls, let those in flight finish (aborted after ``grace_s``), wait
        for index builds under way, close the store."""
        try:
            self.server.stop(grace_s).wait()
            self.collections.builds.settle()
        finally:
            self.store.close()


def start(
    path: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    api_key: str | None = None,
    workers: int = DEFAULT_WORKERS,
) -> Endpoint:
    """Open the folder and serve it; ``port`` 0 takes a free one (``Endpoint.port``)."""
    store = EdgeServerStore(path)
    try:
        server = grpc.server(
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="qdrant-endpoint"),
            interceptors=[ApiKeyCheck(api_key)] if api_key else None,
            options=_OPTIONS,
        )
        collections = CollectionsService(store)
        add_CollectionsServicer_to_server(collections, server)
        add_PointsServicer_to_server(PointsService(store), server)
        add_QdrantServicer_to_server(HealthService(), server)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            bound = server.add_insecure_port(address)
        except RuntimeError as e:  # grpcio raises it for a port in use
            raise OSError(f"cannot listen on {address}: {e}") from None
        if not bound:
            raise OSError(f"cannot listen on {address}")
        server.start()
    except BaseException:
        store.close()
        raise
    return Endpoint(server, store, collections, host, bound)
