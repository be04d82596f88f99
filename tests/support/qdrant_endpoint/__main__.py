"""``python -m tests.support.qdrant_endpoint --path DIR --port PORT``: serve the folder
until SIGTERM or SIGINT, then stop cleanly (exit 0).

Once it listens it prints exactly one line to stdout, ``qdrant endpoint listening on
HOST:PORT (path DIR)`` (``--port 0`` takes a free port: read it there); logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from poolq.sinks.store.errors import NotAStoreError, StoreLockedError
from tests.support.qdrant_endpoint.server import DEFAULT_WORKERS, start

log = logging.getLogger("tests.support.qdrant_endpoint")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m tests.support.qdrant_endpoint",
        description="A Qdrant-protocol gRPC endpoint over a Qdrant Edge folder.",
    )
    p.add_argument(
        "--path", type=Path, required=True, help="the Qdrant Edge folder (created if missing)"
    )
    p.add_argument("--port", type=int, required=True, help="gRPC port; 0 takes a free one")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--api-key", default=None, help="require this key on every call")
    p.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help="threads serving calls")
    p.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        endpoint = start(
            args.path, host=args.host, port=args.port, api_key=args.api_key, workers=args.workers
        )
    except (OSError, NotAStoreError, StoreLockedError) as e:
        print(f"qdrant endpoint: {e}", file=sys.stderr, flush=True)
        return 1
    print(
        f"qdrant endpoint listening on {args.host}:{endpoint.port} (path {args.path})", flush=True
    )
    while not stop.wait(0.5):
        pass
    log.info("stopping: calls in flight finish, then the folder is closed")
    endpoint.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
