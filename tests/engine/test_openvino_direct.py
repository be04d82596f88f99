"""``poolq encode --backend openvino`` without torch (``runtime/direct_encode.py``): a second
start on a cached dense graph imports no torch and writes what the full start writes; the
numpy pooling against the torch formulas; what it declines goes the full way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("openvino")
pytest.importorskip("nncf")

from poolq.worker.engine.openvino import direct_plan
from poolq.worker.engine.openvino.direct_plan import DirectPlan
from poolq.worker.engine.openvino.direct_pool import normalized, pool_rows
from poolq.worker.engine.process_options import process_options_set
from poolq.worker.runtime.direct_encode import direct_start
from poolq.worker.runtime.encode_lines import EncodeOptions
from tests.texts import varied_texts

TEXTS = varied_texts(40)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 5),
    length=st.integers(1, 12),
    method=st.sampled_from(["CLS", "MEAN", "LAST"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_numpy_pooling_is_the_torch_formula(rows, length, method, seed):
    rng = np.random.default_rng(seed)
    hidden = rng.standard_normal((rows, length, 8)).astype(np.float32)
    lens = rng.integers(1, length + 1, size=rows).tolist()
    got = normalized(pool_rows(hidden, lens, method))
    h = torch.from_numpy(hidden)
    ref = []
    for r, n in enumerate(lens):
        x = {"CLS": h[r, 0], "LAST": h[r, n - 1], "MEAN": h[r, :n].sum(0) / n}[method]
        ref.append(F.normalize(x, p=2, dim=-1))
    np.testing.assert_allclose(got, torch.stack(ref).numpy(), rtol=0, atol=2e-6)
    assert got.dtype == np.float32


def test_numpy_pooling_refuses_bad_lengths():
    with pytest.raises(ValueError, match=r"lens: expected 2 counts in 1\.\.3"):
        pool_rows(np.zeros((2, 3, 4), np.float32), [1, 4], "MEAN")


def _encode(model: str, src: Path, out: Path, cache: str, *args: str) -> tuple[str, str]:
    """``poolq encode --backend openvino``: (stderr, the modules torch's import timing names)."""
    r = subprocess.run(
        [
            *(sys.executable, "-X", "importtime", "-m", "poolq.worker", "encode", str(src)),
            *("--model", model, "--backend", "openvino", "-o", str(out), *args),
        ],
        env={**os.environ, "POOLQ_CACHE_DIR": cache},
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = r.stderr.splitlines()
    imported = [ln.rsplit("|", 1)[1].strip() for ln in lines if ln.startswith("import time:")]
    said = "\n".join(  # tqdm's bar may share a line; the neighbours' CPU share varies
        ln[ln.index("poolq encode") :]
        for ln in lines
        if "poolq encode" in ln and "intra-op threads" not in ln
    )
    assert r.returncode in (0, 1), r.stderr[-2000:]
    return said, " ".join(imported)


def _vectors(path: Path) -> tuple[list[object], np.ndarray]:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    return [r["id"] for r in rows], np.asarray([r["embed"] for r in rows], dtype=np.float32)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_a_cached_dense_encode_imports_no_torch_and_writes_what_the_engine_writes(
    minilm, tmp_path, dtype
):
    cache = str(tmp_path / "cache")
    src = tmp_path / "in.jsonl"
    long = "word " * 400  # cut at the model's 256 tokens; an error with --no-truncate
    texts = [*TEXTS, long]
    src.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    args = ("--dtype", dtype, "--no-truncate")
    # the first start converts (and for int8 quantizes and gates): torch, the engine
    _, imported = _encode(minilm, src, tmp_path / "a.jsonl", cache, *args)
    assert " torch " in f" {imported} "
    # --dimensions 384 (the full width) keeps the engine's path: the reference of this run
    full, imported = _encode(minilm, src, tmp_path / "b.jsonl", cache, *args, "--dimensions", "384")
    assert " torch " in f" {imported} "
    direct, imported = _encode(minilm, src, tmp_path / "c.jsonl", cache, *args)
    assert " torch " not in f" {imported} " and "transformers" not in imported
    assert direct == full  # the same errors, gate line, thread line and counts
    assert "input is longer than the model's max length 256 tokens and truncate=False" in direct
    ids_b, ref = _vectors(tmp_path / "b.jsonl")
    ids_c, got = _vectors(tmp_path / "c.jsonl")
    assert ids_b == ids_c and len(ids_b) >= 20 and "d40" not in ids_c
    assert f"{len(ids_c)} written, {len(texts) - len(ids_c)} skipped" in direct
    cos = (ref * got).sum(1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(got, axis=1)
    assert float(cos.min()) >= 0.99999 and float(np.abs(ref - got).max()) < 1e-5


def test_what_the_torch_free_start_declines_goes_the_full_way(minilm, tmp_path, process_options):
    cache = str(tmp_path / "cache")
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": 1, "text": "hello"}) + "\n")
    _encode(minilm, src, tmp_path / "a.jsonl", cache)  # converts, writes the plan
    process_options(backend="openvino", cache_dir=cache)
    embed = EncodeOptions(("embed",))
    kw = {"dtype": None, "device": None, "report_quality": False}
    start = direct_start(minilm, embed, **kw)
    assert start is not None and start.precision == "float32" and start.plan.pooling == "MEAN"
    assert direct_start(minilm, embed, **{**kw, "device": "cpu"}) is not None
    declined = [
        direct_start(minilm, EncodeOptions(("embed", "token_embed")), **kw),
        direct_start(minilm, EncodeOptions(("embed",), dimensions=128), **kw),
        direct_start(minilm, EncodeOptions(("embed",), prompt_name="nope"), **kw),
        direct_start(minilm, embed, **{**kw, "dtype": "bfloat16"}),
        direct_start(minilm, embed, **{**kw, "device": "cuda"}),
        direct_start(minilm, embed, **{**kw, "dtype": "int8"}),  # never quantized nor gated
        direct_start(str(tmp_path), embed, **kw),  # no cached graph for this folder
    ]
    assert declined == [None] * len(declined)
    with process_options_set(backend="torch"):
        assert direct_start(minilm, embed, **kw) is None
    # a plan written by another poolq is not read
    other = DirectPlan(**{**start.plan.__dict__, "poolq": "0.0.0-other"})
    direct_plan.write(start.key, other)
    assert direct_plan.read(start.key) is None and direct_start(minilm, embed, **kw) is None


def test_a_missing_input_fails_before_any_compile_and_a_left_prefetch_is_settled(
    minilm, tmp_path, monkeypatch
):
    """A compile still running on the prefetch thread when the interpreter exits aborts the
    process (seen: exit 134 for a missing input on a cached model): the input is checked
    before the prefetch starts, and :func:`prefetch.settle` waits for one nobody took."""
    from typer.testing import CliRunner

    from poolq.worker.cli.app import app
    from poolq.worker.engine.openvino import prefetch

    started = []
    monkeypatch.setattr(prefetch, "start", lambda *a, **k: started.append(a))
    monkeypatch.setenv("POOLQ_BACKEND", "openvino")
    r = CliRunner().invoke(app, ["encode", str(tmp_path / "nowhere.jsonl"), "--model", minilm])
    assert r.exit_code == 2 and started == []
    assert "nowhere.jsonl' does not exist" in r.output
    monkeypatch.undo()
    with process_options_set(cache_dir=str(tmp_path / "cache")):
        prefetch.start(minilm, "float32", threads=1)  # nothing cached: nothing to compile
    assert prefetch._pending is not None
    prefetch.settle()
    assert prefetch._pending is None
    prefetch.settle()  # nothing pending: a no-op


def test_a_plan_is_written_only_for_the_default_settings(minilm, tmp_path, process_options):
    from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
    from poolq.worker.engine.openvino import cache

    process_options(backend="openvino", cache_dir=str(tmp_path))
    key = cache.cache_key(minilm, sparse_head=False, precision="float32")
    load_model(ModelConfig(minilm, dtype="float32", pooling="CLS"))
    assert cache.has(key) and direct_plan.read(key) is None  # CLS is not the model's MEAN
    model = load_model(ModelConfig(minilm, dtype="float32"))
    plan = direct_plan.read(key)
    assert plan is not None and plan == direct_plan.plan_for(model)
    assert (plan.pooling, plan.normalize, plan.hidden_size) == ("MEAN", True, 384)
    assert plan.max_length == model.description.max_length
