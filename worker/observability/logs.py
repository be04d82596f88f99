"""Worker logging: one line per event, as JSON (``--log-format json``, for log pipelines) or
text. Job events carry ``job_id`` and ``function`` fields. arq's own per-job lines are turned
down to warnings: they print job arguments (document text) and results.

Secrets never reach the logs: URLs are logged without their credentials (:func:`redact_url`),
and settings holding keys are not logged.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from poolq.wire.connection import redact_url

__all__ = ["JsonFormatter", "configure", "redact_url"]

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": round(record.created, 3),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out |= {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def configure(fmt: str = "text", level: int = logging.INFO) -> None:
    if fmt not in ("text", "json"):
        raise ValueError(f"log format: expected text or json, got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter()
        if fmt == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("arq.worker").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
