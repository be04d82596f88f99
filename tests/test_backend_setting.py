"""The backend setting: ``[engine] backend`` in the config, ``POOLQ_BACKEND``, the
``--backend`` flags; checked where it is read, before any model loads. The OpenVINO backend
itself: ``tests/engine/test_openvino.py``."""

from __future__ import annotations

import json

import pytest

from poolq.worker.config.settings import load_settings
from tests.cli_process import poolq


def test_engine_table_then_env_then_flag(tmp_path):
    cfg = tmp_path / "poolq.toml"
    cfg.write_text('[engine]\nbackend = "openvino"\n')
    assert load_settings(cfg, environ={}).backend == "openvino"
    assert load_settings(cfg, environ={"POOLQ_BACKEND": "auto"}).backend == "auto"
    s = load_settings(cfg, {"backend": "torch"}, environ={"POOLQ_BACKEND": "auto"})
    assert s.backend == "torch"
    assert load_settings(None, environ={}).backend is None  # unset: torch


def test_bad_backend_values_and_keys_are_named(tmp_path):
    cfg = tmp_path / "poolq.toml"
    cfg.write_text('[engine]\nbackend = "onnx"\n')
    with pytest.raises(ValueError, match="backend: expected one of torch, openvino, auto"):
        load_settings(cfg, environ={})
    cfg.write_text('[engine]\nbackends = "auto"\n')
    with pytest.raises(ValueError, match=r"config \[engine\]: unknown keys \['backends'\]"):
        load_settings(cfg, environ={})


def test_encode_refuses_an_unknown_backend(minilm, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    r = poolq("encode", "--model", minilm, "--backend", "onnx", str(src))
    assert r.returncode == 2 and "expected one of torch, openvino, auto" in r.stderr


def test_encode_openvino_int8_runs_the_gated_openvino_model(minilm, tmp_path, monkeypatch):
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": i, "text": f"text {i} " * i}) + "\n" for i in range(8))
    )
    out = tmp_path / "out.jsonl"
    monkeypatch.setenv("POOLQ_CACHE_DIR", str(tmp_path / "cache"))
    args = ("encode", "--model", minilm, "--backend", "openvino", "--dtype", "int8", str(src))
    r = poolq(*args, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "quality gate (built-in sample): int8 vs float32 on 42 texts" in r.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == list(range(8)) and len(rows[0]["embed"]) == 384
    # the OpenVINO int8 model and its gate verdict, in the cache the encode was pointed at
    assert list((tmp_path / "cache" / "openvino").glob("*/passed-*.json"))
    # a cached start (a dense embed: run without torch, runtime/direct_encode.py; ended
    # without the interpreter's teardown, cli/quick_exit.py) writes the same rows to float32
    # rounding (its own buckets and numpy pooling), and the very same bytes to a file and to a
    # pipe; it prints the cached gate verdict
    again = poolq(*args, "-o", str(tmp_path / "again.jsonl"))
    assert again.returncode == 0, again.stderr
    assert "quality gate (built-in sample): int8 vs float32 on 42 texts" in again.stderr
    first = [json.loads(x) for x in out.read_text().splitlines()]
    second = [json.loads(x) for x in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert [r["id"] for r in second] == [r["id"] for r in first]
    diff = max(
        abs(a - b)
        for r, q in zip(first, second, strict=True)
        for a, b in zip(r["embed"], q["embed"], strict=True)
    )
    assert diff < 1e-5
    piped = poolq(*args)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (tmp_path / "again.jsonl").read_text()


def test_openvino_with_dtype_auto_runs_float32_on_a_native_bf16_cpu(minilm, monkeypatch):
    """``auto`` is bf16 on AMX / AVX512-BF16 CPUs, which OpenVINO's backend does not run: with
    ``backend = "openvino"`` and no dtype the model loads in float32 instead of failing."""
    from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
    from poolq.worker.engine.cpu import cpu_features
    from poolq.worker.engine.process_options import process_options_set

    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: frozenset({"avx512f", "amx_bf16"}))
    with process_options_set(backend="openvino", auto_bf16=True):
        assert load_model(ModelConfig(minilm)).precision == "float32"
    with process_options_set(backend="torch", auto_bf16=True):
        assert load_model(ModelConfig(minilm)).precision == "bfloat16"  # torch keeps bf16
