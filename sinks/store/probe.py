"""Does the server at a URL speak Qdrant's protocol, in the transport poolq will use? One
request, before anything heavy loads: REST ``GET /`` answered with Qdrant's JSON (its
``version``), or gRPC's ``qdrant.Qdrant/HealthCheck``. A port that accepts connections but
speaks the other protocol (the REST client on Qdrant's gRPC port 6334, or the reverse) then
fails in seconds with one line, instead of every job failing later with a protocol error."""

from __future__ import annotations

from poolq.sinks.store.server_target import DEFAULT_GRPC_PORT, DEFAULT_REST_PORT, ServerTarget

PROBE_TIMEOUT_S = 5.0


def check_speaks_qdrant(
    target: ServerTarget, api_key: str | None = None, timeout_s: float = PROBE_TIMEOUT_S
) -> None:
    """``ConnectionError`` naming the address and the transport when the server at ``target``
    does not answer as Qdrant does over it."""
    if target.transport == "rest":
        _check_rest(target, api_key, timeout_s)
    else:
        _check_grpc(target, api_key, timeout_s)


def _check_rest(target: ServerTarget, api_key: str | None, timeout_s: float) -> None:
    import httpx

    where = f"{target.host}:{target.rest_port}"
    scheme = "https" if target.tls else "http"
    headers = {"api-key": api_key} if api_key else {}
    try:
        r = httpx.get(f"{scheme}://{where}/", headers=headers, timeout=timeout_s)
        speaks = r.status_code in (401, 403) or "version" in r.json()
    except (httpx.HTTPError, ValueError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        speaks = False
    else:
        reason = f"HTTP {r.status_code} without Qdrant's version"
    if not speaks:
        raise ConnectionError(
            f"Qdrant does not answer REST at {where} ({reason}); if this is its gRPC port, "
            f"use grpc://{where} (or REST's port, {DEFAULT_REST_PORT} by default)"
        )


def _check_grpc(target: ServerTarget, api_key: str | None, timeout_s: float) -> None:
    import grpc
    from qdrant_client.grpc import qdrant_pb2, qdrant_pb2_grpc

    where = f"{target.host}:{target.grpc_port}"
    channel = (
        grpc.secure_channel(where, grpc.ssl_channel_credentials())
        if target.tls
        else grpc.insecure_channel(where)
    )
    metadata = (("api-key", api_key),) if api_key else None
    try:
        qdrant_pb2_grpc.QdrantStub(channel).HealthCheck(
            qdrant_pb2.HealthCheckRequest(), timeout=timeout_s, metadata=metadata
        )
    except grpc.RpcError as e:
        code = e.code() if callable(getattr(e, "code", None)) else None
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            return  # it speaks Qdrant's gRPC; the key is the server's business
        details = e.details() if callable(getattr(e, "details", None)) else str(e)
        raise ConnectionError(
            f"Qdrant does not answer gRPC at {where} ({code.name if code else 'error'}: "
            f"{' '.join(str(details).split())}); if this is its REST port, give it with "
            f"--qdrant-transport rest, or use gRPC's port ({DEFAULT_GRPC_PORT} by default)"
        ) from None
    finally:
        channel.close()
