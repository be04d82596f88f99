"""Start-up: loading a native (BERT-family) model imports neither transformers (~1.7 s) nor
torch's compiler stack (``torch._dynamo``, sympy: ~2 s, which meta-device init pulls in), in
fp32 and in int8. Fresh interpreters, ``sys.modules`` read after the load."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

UNWANTED = ("transformers", "torch._dynamo", "sympy", "sentence_transformers")


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("which", ["minilm", "splade"])
def test_loading_a_native_model_imports_no_transformers(which, dtype, minilm, splade):
    path = {"minilm": minilm, "splade": splade}[which]
    code = (
        "from poolq.worker.engine.checkpoints.description import Int8Floors\n"
        "from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model\n"
        "lenient = Int8Floors(0.5, 0.5, 0.5, 0.5)  # the gate's figures are not this test's\n"
        f"m = load_model(ModelConfig({path!r}, dtype={dtype!r}, int8_floors=lenient))\n"
        "import json, sys\n"
        "print(json.dumps([m.precision, sorted(sys.modules)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    precision, mods = json.loads(out.stdout.strip().splitlines()[-1])
    assert precision == dtype
    assert [m for m in mods if m.split(".")[0] in UNWANTED or m.startswith("torch._dynamo")] == []
