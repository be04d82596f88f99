"""Connection settings and logs: TLS and AUTH for Redis, no secrets in reprs or log lines."""

import json
import logging

from poolq.sinks.writer import QdrantWriter
from poolq.worker.config.settings import Settings
from poolq.worker.observability.logs import JsonFormatter, redact_url
from poolq.worker.wire.connection import redis_settings


def test_rediss_url_means_tls_with_auth_and_retries():
    s = redis_settings("rediss://:pa55@cache.example:6380/2")
    assert (s.ssl, s.password, s.host, s.port, s.database) == (
        True,
        "pa55",
        "cache.example",
        6380,
        2,
    )
    assert s.retry is not None and s.retry_on_error  # rides out a restart
    assert redis_settings("redis://localhost:6379/0").ssl is False


def test_urls_and_reprs_hide_secrets():
    assert redact_url("redis://:pa55@h:1/0") == "redis://***@h:1/0"
    assert redact_url("redis://user:pa55@h/0") == "redis://***@h/0"
    assert redact_url("redis://h:1/0") == "redis://h:1/0"
    w = QdrantWriter(url="https://user:pw@q.example:6333", api_key="k3y-s3cret")
    assert "k3y-s3cret" not in repr(w) and "pw" not in repr(w)
    assert "https://q.example:6333" in repr(w)
    assert "k3y" not in repr(Settings(qdrant_api_key="k3y-s3cret"))


def test_json_log_lines_carry_job_fields():
    rec = logging.LogRecord("poolq.jobs", logging.INFO, "f", 1, "job %s done", ("j1",), None)
    rec.job_id = "j1"
    rec.function = "ingest"
    out = json.loads(JsonFormatter().format(rec))
    assert out["msg"] == "job j1 done" and out["job_id"] == "j1" and out["function"] == "ingest"
    assert out["level"] == "info" and out["logger"] == "poolq.jobs"
