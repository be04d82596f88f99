"""The dashboard is a client: importing its application loads no torch, no worker code and no
Qdrant client (a fresh interpreter, so other tests' imports do not hide one)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "transformers", "qdrant_client", "qdrant_edge", "poolq.worker")
# the settings' declarations and their loader (standard library only), as every client reads them
ALLOWED = {"poolq.worker.config.client_settings", "poolq.worker.config.loader"}
ALLOWED |= {
    "poolq.worker.config.tables",
    "poolq.worker.config.variables",
    "poolq.worker",
    "poolq.worker.config",
}


def test_the_dashboard_imports_no_torch_worker_or_store():
    code = (
        "import json, sys\n"
        "import poolq.ingest.dashboard.app, poolq.ingest.dashboard.pages\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mods = json.loads(out.stdout)
    assert "starlette" in mods and "poolq.ingest.dashboard.app" in mods
    assert "torch" not in mods
    assert not [m for m in mods if m.startswith(HEAVY) and m not in ALLOWED]
