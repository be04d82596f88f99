"""The client is only a client: importing it, or starting a client command, loads no ML stack.

Each check runs in a fresh interpreter and reads ``sys.modules`` after the import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # fresh interpreters (subprocesses)

HEAVY = ("torch", "transformers", "tokenizers", "qdrant_client", "numpy", "safetensors")
ENGINE = ("poolq.worker.engine", "poolq.worker.pooling", "poolq.worker.runtime")


def loaded_after(code: str) -> list[str]:
    probe = code + "\nimport json, sys\n" + "print(json.dumps(sorted(m for m in sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def heavy_in(modules: list[str]) -> list[str]:
    return [
        m
        for m in modules
        if m.split(".")[0] in HEAVY or any(m == e or m.startswith(e + ".") for e in ENGINE)
    ]


def test_the_client_api_imports_without_the_ml_stack():
    mods = loaded_after(
        "from poolq import PoolqClient, SyncPoolqClient, SearchRequest, SearchResult, Hit, "
        "SearchError, JobOutcome"
    )
    assert "poolq.ingest.client" in mods  # the probe did import the client
    assert heavy_in(mods) == []


def test_the_package_top_loads_the_client_only_when_a_name_of_it_is_used():
    """A worker process (its modules sit beneath the package) does not import the client,
    redis and arq for nothing: ``poolq``'s names load on first use."""
    mods = loaded_after("import poolq, poolq.wire.constants")
    assert not {"poolq.ingest.client", "arq", "redis"} & set(mods)
    mods = loaded_after("import poolq\nassert poolq.ErrorCode.INTERNAL and poolq.PoolqClient")
    assert "poolq.ingest.client" in mods


def test_search_types_validate_filters_without_qdrant():
    mods = loaded_after(
        "from poolq import SearchRequest, SearchError\n"
        "SearchRequest('docs', 'hybrid', 5, ('lang=en', 'year>=2020'))\n"
        "try:\n    SearchRequest('docs', filters=('year>>1',))\nexcept SearchError:\n    pass\n"
        "else:\n    raise SystemExit('bad filter accepted')\n"
    )
    assert heavy_in(mods) == []


@pytest.mark.parametrize("command", ["enqueue", "status", "search", "dlq", "reindex"])
def test_client_commands_start_without_the_ml_stack(command):
    """Parse a client command's --help through the real CLI app, then look at sys.modules."""
    mods = loaded_after(
        "from poolq.worker.cli import app\n"
        "from typer.main import get_command\n"
        "cmd = get_command(app)\n"
        f"try:\n    cmd.main(['{command}', '--help'], prog_name='poolq')\n"
        "except SystemExit:\n    pass\n"
    )
    assert heavy_in(mods) == []


def test_a_client_runs_where_the_ml_stack_cannot_be_imported(tmp_path):
    """As on a client-only install: torch & co. raise ImportError, the client still works up to
    the network (the request is validated, the connection attempt fails as usual)."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {HEAVY!r}:\n"
        "            raise ImportError(f'{name} is not installed (blocked)')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from poolq import PoolqClient, SearchRequest\n"
        "SearchRequest('docs', 'dense', 3, ('lang=en',))\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_the_worker_command_does_load_the_engine():
    """The probe can see the ML stack when it is loaded (so the checks above can fail)."""
    mods = loaded_after("import poolq.worker.runtime.vectorizer")
    assert "torch" in mods and "poolq.worker.engine.engine" in mods
