import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# "auto" precision stays float32 on CPUs with native bf16 (AMX, AVX512-BF16), here and in the
# worker processes tests start: the fidelity tests compare to fp32 references at fp32 tolerance
os.environ.setdefault("POOLQ_AUTO_BF16", "0")
torch.set_num_threads(min(2, os.cpu_count() or 1))
if os.environ["POOLQ_AUTO_BF16"] == "0":  # (in this process: the engine's process options)
    from poolq.worker.engine.process_options import set_process_options

    set_process_options(auto_bf16=False)


@pytest.fixture(scope="session")
def minilm():
    from tests.models import minilm_path

    return str(minilm_path())


@pytest.fixture(scope="session")
def splade():
    from tests.models import splade_path

    return str(splade_path())


@pytest.fixture(scope="session")
def colbert(tmp_path_factory):
    from tests.models import build_colbert

    return str(build_colbert(tmp_path_factory.mktemp("colbert")))


@pytest.fixture(scope="session")
def multi_head(tmp_path_factory):
    from tests.models import build_multi_head

    return str(build_multi_head(tmp_path_factory.mktemp("multi_head")))


@pytest.fixture
def redis_server(tmp_path):
    """A real ``redis-server`` on a free port, stopped after the test."""
    from poolq.worker.dev.local_redis import LocalRedis

    server = LocalRedis(tmp_path / "redis").start()
    yield server
    server.stop()


# `make test-fast` runs `pytest -m "not slow"`: unit tests only. A test is slow when it starts a
# process (Redis, a worker, the CLI) or loads a real model; these fixtures do, so tests that use
# them are marked here, as is everything under tests/integration/.
SLOW_FIXTURES = frozenset(
    {"redis_server", "minilm", "splade", "colbert", "multi_head", "compose", "config", "cpu_config"}
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if (
            SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
            or "integration" in item.path.parts
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def process_options():
    """``use(**options)``: the engine's process options (backend, auto_bf16, cache_dir) for the
    rest of the test, restored after it."""
    from poolq.worker.engine import process_options as options

    before = options.process_options()
    yield lambda **changes: options.set_process_options(**changes)
    options.set_process_options(**before.__dict__)
