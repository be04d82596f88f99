import pytest

from tests.sources.s3_server import S3Server


@pytest.fixture
def s3_server(monkeypatch):
    """A real S3 API (moto's server) on a free port, stopped after the test; the standard AWS
    variables point at it, and nothing else is set."""
    server = S3Server().start()
    server.reset()
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    yield server
    server.stop()
