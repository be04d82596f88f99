"""The client side is light: importing any module of ``poolq.ingest`` (and ``poolq`` itself)
loads no worker module but the settings' declarations and loader, and no torch, transformers or
Qdrant client. Run in a fresh interpreter, so
what other tests imported does not hide it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("poolq.worker", "torch", "transformers", "qdrant_client", "qdrant_edge", "tokenizers")
# the settings' declarations and their one loader (standard library only): the client reads
# its own settings (redis_url, redis_outage_limit_s) with them, as the workers do
SETTINGS = [
    "poolq.worker",
    "poolq.worker.config",
    "poolq.worker.config.client_settings",
    "poolq.worker.config.loader",
    "poolq.worker.config.tables",
    "poolq.worker.config.variables",
]

CODE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
heavy = tuple(json.loads(sys.stdin.read()))
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(heavy))))
"""


def client_modules() -> list[str]:
    """``poolq`` and every module under ``ingest/``, its commands (``ingest/cli``) included."""
    names = ["poolq"]
    for path in sorted((ROOT / "ingest").rglob("*.py")):
        parts = path.relative_to(ROOT / "ingest").with_suffix("").parts
        names.append(".".join(["poolq.ingest", *(p for p in parts if p != "__init__")]))
    return names


def loaded_by(modules: list[str]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", CODE, *modules],
        input=json.dumps(HEAVY), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(out.stdout)


def test_the_client_loads_no_worker_model_or_store_code():
    modules = client_modules()
    assert len(modules) > 10, modules
    assert "poolq.ingest.cli.enqueue" in modules and "poolq.ingest.cli.dlq" in modules
    assert loaded_by(modules) == SETTINGS


def test_the_settings_modules_load_nothing_else():
    assert loaded_by(SETTINGS) == SETTINGS


def test_the_check_sees_a_heavy_import():
    """The checker itself: a worker module is reported."""
    assert "poolq.worker.config.profile" in loaded_by(["poolq.worker.config.profile"])


def test_the_package_top_has_one_name():
    """``poolq/__init__.py`` is ``poolq`` and nothing else: no folder under ``ingest/`` installs
    it a second time (as ``ingest/api/`` once did, also reachable as ``poolq.ingest.api``)."""
    import poolq

    assert Path(poolq.__file__).resolve() == ROOT / "poolq" / "__init__.py"
    assert importlib.util.find_spec("poolq.ingest.api") is None
