import pytest

from poolq.worker.dev.local_redis import LocalRedis


@pytest.fixture
def redis_server(tmp_path):
    server = LocalRedis(tmp_path / "redis").start()
    yield server
    server.stop()
