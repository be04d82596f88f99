"""The OpenVINO backend (``worker/engine/openvino/``) against the torch engine on the bundled
MiniLM (bert, dense + multi-vector), SPLADE-tiny (bert MLM head, the max over tokens in the
graph), a ColBERT (query key masks) and a DistilBERT SPLADE built at test time: fp32 within
cos >= 0.99999 per vector and the same SPLADE non-zeros within 1e-4; the disk cache (a second
load converts nothing); int8 behind the quality gate; the backend setting."""

from __future__ import annotations

import logging
import os

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("openvino")
pytest.importorskip("nncf")

from poolq.worker.engine.checkpoints.description import Int8Floors
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.cpu.int8_gate import Int8QualityError, encode_texts
from poolq.worker.engine.models.packed_encoder import PackedEncoder
from poolq.worker.engine.openvino import graph
from poolq.worker.engine.openvino.buckets import bucket_lengths, plan_calls
from poolq.worker.engine.openvino.encoder import OpenVinoEncoder
from poolq.worker.engine.process_options import ProcessOptions, process_options_set
from tests.texts import varied_texts

TEXTS = varied_texts(60)  # short to past 256 tokens: several buckets and calls per batch


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("poolq-cache"))


def load(path: str, backend: str, cache: str, **cfg):
    cfg.setdefault("dtype", "float32")  # not "auto": bf16 on CPUs with AMX / avx512_bf16
    with process_options_set(backend=backend, cache_dir=cache):
        return load_model(ModelConfig(path, **cfg))


@pytest.fixture(scope="module")
def minilm_pair(minilm, cache_dir):
    return load(minilm, "torch", cache_dir), load(minilm, "openvino", cache_dir)


@pytest.fixture(scope="module")
def splade_pair(splade, cache_dir):
    return load(splade, "torch", cache_dir), load(splade, "openvino", cache_dir)


def min_cos(ref, got, task):
    return min(
        float(
            F.cosine_similarity(
                r[task].reshape(-1, r[task].shape[-1]), g[task].reshape(-1, g[task].shape[-1])
            ).min()
        )
        for r, g in zip(ref, got, strict=True)
    )


def test_buckets_hold_every_sequence_once_within_the_budget():
    lengths = bucket_lengths(256)
    assert lengths[-1] == 256 and list(lengths) == sorted(set(lengths))
    seq_lens = [3, 256, 17, 16, 0, 100, 33, 250]
    calls = plan_calls(seq_lens, lengths, budget=300)
    seen = sorted(s for c in calls for s in c.seqs)
    assert seen == [0, 1, 2, 3, 5, 6, 7]
    for c in calls:
        assert all(seq_lens[s] <= c.length for s in c.seqs)
        assert len(c.seqs) == 1 or len(c.seqs) * c.length <= 300
        assert c.length == min(n for n in lengths if n >= max(seq_lens[s] for s in c.seqs))


def test_minilm_fp32_matches_torch(minilm_pair):
    ref_m, ov_m = minilm_pair
    assert isinstance(ref_m.encoder, PackedEncoder) and isinstance(ov_m.encoder, OpenVinoEncoder)
    tasks = ["embed", "token_embed"]
    ref, got = encode_texts(ref_m, TEXTS, tasks), encode_texts(ov_m, TEXTS, tasks)
    assert min_cos(ref, got, "embed") >= 0.99999
    assert min_cos(ref, got, "token_embed") >= 0.99999
    assert ov_m.encoder.calls > 2  # several buckets were run


def sparse_agree(ref, got, vocab):
    for r, g in zip(ref, got, strict=True):
        a, b = r["sparse"], g["sparse"]
        assert torch.equal(a.indices, b.indices)
        assert (a.to_dense(vocab) - b.to_dense(vocab)).abs().max() <= 1e-4


def test_splade_fp32_same_non_zeros_with_the_max_in_the_graph(splade_pair):
    ref_m, ov_m = splade_pair
    pooler = ov_m.pooler.poolers_by_task["sparse"]
    before = pooler.graph_hits
    ref, got = encode_texts(ref_m, TEXTS, ["sparse"]), encode_texts(ov_m, TEXTS, ["sparse"])
    sparse_agree(ref, got, ov_m.description.vocab_size)
    assert pooler.graph_hits - before == len(TEXTS)  # every text pooled by the graph


def test_colbert_query_key_masks_match_torch(colbert, cache_dir):
    from poolq.worker.engine.engine import AsyncEngine  # noqa: F401 (the engine's own forms)

    ref_m, ov_m = load(colbert, "torch", cache_dir), load(colbert, "openvino", cache_dir)
    form = ov_m.description.input_forms.form("query")
    toks = [form.apply(t) for t in ov_m.tokenizer.encode_batch([form.text(t) for t in TEXTS[:12]])]
    assert any(t.key_mask_cpu is not None and not bool(t.key_mask_cpu.all()) for t in toks)
    ids = torch.tensor([i for t in toks for i in t.ids])
    lens = [len(t.ids) for t in toks]
    masks = torch.cat(
        [
            t.key_mask_cpu
            if t.key_mask_cpu is not None
            else torch.ones(len(t.ids), dtype=torch.bool)
            for t in toks
        ]
    )
    with torch.inference_mode():
        a = ref_m.encoder(ids, lens, key_mask_cpu=masks)
        b = ov_m.encoder(ids, lens, key_mask_cpu=masks)
    assert float(F.cosine_similarity(a, b).min()) >= 0.99999


def test_distilbert_splade_fp32_matches_torch(tmp_path, cache_dir):
    from tests.engine.test_distilbert import build_distilbert

    path = str(build_distilbert(tmp_path / "distil", masked_lm=True))
    ref_m, ov_m = load(path, "torch", cache_dir), load(path, "openvino", cache_dir)
    assert isinstance(ov_m.encoder, OpenVinoEncoder)
    ref, got = (
        encode_texts(ref_m, TEXTS[:20], ["sparse"]),
        encode_texts(ov_m, TEXTS[:20], ["sparse"]),
    )
    sparse_agree(ref, got, ov_m.description.vocab_size)


def test_a_second_load_reads_the_cache_and_converts_nothing(
    minilm, minilm_pair, cache_dir, monkeypatch
):
    def no_convert(*a, **k):
        raise AssertionError("converted again")

    monkeypatch.setattr(graph, "convert", no_convert)
    again = load(minilm, "openvino", cache_dir)
    assert isinstance(again.encoder, OpenVinoEncoder)


def test_int8_passes_the_gate_and_stays_close(minilm, minilm_pair, cache_dir):
    ref_m, _ = minilm_pair
    q = load(minilm, "openvino", cache_dir, dtype="int8")
    assert q.precision == "int8" and q.encoder.precision == "int8"
    assert q.int8_report is not None and q.int8_report.passed
    ref, got = encode_texts(ref_m, TEXTS, ["embed"]), encode_texts(q, TEXTS, ["embed"])
    cos = torch.tensor(
        [
            float(F.cosine_similarity(r["embed"], g["embed"], dim=0))
            for r, g in zip(ref, got, strict=True)
        ]
    )
    # static activation scales: min 0.93 on these texts (torch's dynamic int8: 0.97)
    assert cos.mean() >= 0.99 and cos.min() >= 0.9, (cos.min(), cos.mean())
    assert cos.mean() < 0.99999  # int8 really ran


def test_splade_int8_runs_the_first_mode_that_passes_the_gate(
    splade, splade_pair, cache_dir, caplog
):
    caplog.set_level(logging.INFO, logger="poolq.openvino")
    q = load(splade, "openvino", cache_dir, dtype="int8")
    assert q.int8_report is not None and q.int8_report.passed
    lines = [r.getMessage() for r in caplog.records]
    assert any("backend openvino: openvino" in m and "gate passed" in m for m in lines), lines
    caplog.clear()
    again = load(splade, "openvino", cache_dir, dtype="int8")  # refused modes are not redone
    assert again.int8_report.passed
    assert again.int8_report.summary() == q.int8_report.summary()
    assert any("(cached verdict)" in r.getMessage() for r in caplog.records)
    ref = encode_texts(q, TEXTS[:10], ["sparse"])
    sparse_agree(ref, encode_texts(again, TEXTS[:10], ["sparse"]), q.description.vocab_size)


def test_a_cached_start_builds_no_torch_encoder(
    minilm, splade, minilm_pair, splade_pair, cache_dir, monkeypatch
):
    """backend openvino with the converted models cached (fp32 and int8, from the tests above):
    the checkpoint is not read whole, no torch encoder is built, the SPLADE head's tensors are
    the only ones read, and the outputs are those of a start that built it."""
    from poolq.worker.engine.checkpoints import loader
    from poolq.worker.engine.openvino import cached_start

    def no_torch(*args, **kwargs):
        raise AssertionError("the torch model was loaded")

    monkeypatch.setattr(loader, "load_weights", no_torch)
    monkeypatch.setattr(PackedEncoder, "from_state_dict", no_torch)
    opened = []

    def tracked(path):
        opened.append(real(path))
        return opened[-1]

    real = cached_start.lazy_weights
    monkeypatch.setattr(cached_start, "lazy_weights", tracked)
    m, s = load(minilm, "openvino", cache_dir), load(splade, "openvino", cache_dir)
    assert isinstance(m.encoder, OpenVinoEncoder) and isinstance(s.encoder, OpenVinoEncoder)
    assert opened[0].read == ()  # MiniLM's poolers have no head
    assert opened[1].read and not any(".encoder." in k for k in opened[1].read), opened[1].read
    for ref_m, got_m, task in ((minilm_pair[1], m, "embed"), (splade_pair[1], s, "sparse")):
        ref, got = encode_texts(ref_m, TEXTS[:20], [task]), encode_texts(got_m, TEXTS[:20], [task])
        if task == "embed":
            assert all(torch.equal(r[task], g[task]) for r, g in zip(ref, got, strict=True))
        else:
            sparse_agree(ref, got, s.description.vocab_size)
    for path in (minilm, splade):  # int8: the cached model and its cached verdict
        q = load(path, "openvino", cache_dir, dtype="int8")
        assert q.encoder.precision == "int8" and q.int8_report.passed


def test_the_gate_refuses_int8_below_the_floors(minilm, cache_dir):
    floors = Int8Floors(mean_cosine=0.99999)
    with pytest.raises(
        Int8QualityError, match=r"\(openvino, weights\) refused by the quality gate"
    ):
        load(minilm, "openvino", cache_dir, dtype="int8", int8_floors=floors)


def test_auto_keeps_torch_when_openvino_int8_is_refused_and_says_why(minilm, cache_dir, caplog):
    floors = Int8Floors(mean_cosine=0.99999)
    caplog.set_level(logging.INFO, logger="poolq.openvino")
    with pytest.raises(Int8QualityError):  # torch's gate refuses these floors too
        load(minilm, "auto", cache_dir, dtype="int8", int8_floors=floors)
    assert any(
        "backend auto: torch" in r.getMessage() and "refused" in r.getMessage()
        for r in caplog.records
    )


def test_auto_picks_openvino_for_fp32_and_logs_why(minilm, minilm_pair, cache_dir, caplog):
    caplog.set_level(logging.INFO, logger="poolq.openvino")
    m = load(minilm, "auto", cache_dir)
    assert isinstance(m.encoder, OpenVinoEncoder)
    assert any("backend auto: openvino" in r.getMessage() for r in caplog.records)


def test_the_setting_is_checked():
    from poolq.worker.config.loader import load_values

    assert load_values(("backend",), {}, None, {}) == {}  # unset: torch
    assert load_values(("backend",), {}, None, {"POOLQ_BACKEND": "OpenVINO"}) == {
        "backend": "openvino"
    }
    with pytest.raises(ValueError, match="POOLQ_BACKEND: expected one of torch, openvino, auto"):
        load_values(("backend",), {}, None, {"POOLQ_BACKEND": "onnx"})
    with pytest.raises(ValueError, match="backend: expected one of torch, openvino, auto"):
        ProcessOptions(backend="onnx")


def test_openvino_refuses_what_it_cannot_run_and_auto_names_it(minilm, cache_dir, caplog):
    with pytest.raises(ValueError, match="backend 'openvino' cannot run it: precision bfloat16"):
        load(minilm, "openvino", cache_dir, dtype="bfloat16")
    caplog.set_level(logging.INFO, logger="poolq.openvino")
    m = load(minilm, "auto", cache_dir, dtype="bfloat16")
    assert isinstance(m.encoder, PackedEncoder)
    assert any(
        "backend auto: torch" in r.getMessage() and "bfloat16" in r.getMessage()
        for r in caplog.records
    )


def test_a_prefetched_compile_is_the_model_the_loader_asks_for(minilm, minilm_pair, cache_dir):
    """``poolq encode`` compiles the cached model in a thread while torch is imported
    (``prefetch.py``): the loader takes it, and the outputs are those of a start that compiled
    it itself; a prefetch of other settings is dropped."""
    import subprocess
    import sys

    from poolq.worker.engine.openvino import prefetch

    taken = []
    real = prefetch.take

    def spy(key, config):
        taken.append(real(key, config))
        return taken[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(prefetch, "take", spy)
        with process_options_set(cache_dir=cache_dir):
            prefetch.start(minilm, "float32", threads=torch.get_num_threads())
        m = load(minilm, "openvino", cache_dir)
        assert taken and taken[0] is not None and m.encoder.compiled is taken[0]
        ref = encode_texts(minilm_pair[1], TEXTS[:20], ["embed"])
        got = encode_texts(m, TEXTS[:20], ["embed"])
        assert all(torch.equal(r["embed"], g["embed"]) for r, g in zip(ref, got, strict=True))
        taken.clear()
        with process_options_set(cache_dir=cache_dir):
            prefetch.start(minilm, "float32", threads=torch.get_num_threads() + 1)
        load(minilm, "openvino", cache_dir)
        assert taken == [None]  # other thread settings: compiled by the loader as before
    # the prefetch itself imports no torch
    code = (
        "import sys; from poolq.worker.engine.openvino import prefetch; "
        f"prefetch.start({minilm!r}, 'float32', threads=1); "
        "assert prefetch._pending.result() is not None; assert 'torch' not in sys.modules"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "POOLQ_CACHE_DIR": cache_dir},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_encode_batches_as_large_as_one_openvino_call(
    minilm, splade, minilm_pair, splade_pair, cache_dir, tmp_path
):
    """``poolq encode`` on OpenVINO defaults its batch to one call's cap (no query waits behind
    a forward offline); a SPLADE head in the graph keeps the engine's 2048; a given
    ``--max-batch-tokens`` wins."""
    import json

    from poolq.worker.runtime import offline_encode

    assert minilm_pair[1].encoder.offline_batch_tokens == 8192
    seen = []
    real = offline_encode.AsyncEngine

    class Spy(real):
        def __init__(self, model, **kw):
            seen.append(kw.get("max_batch_tokens"))
            super().__init__(model, **kw)

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    opts = offline_encode.EncodeOptions(("embed",))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(offline_encode, "AsyncEngine", Spy)
        with process_options_set(backend="openvino", cache_dir=cache_dir):
            offline_encode.run_encode(minilm, src, tmp_path / "a.jsonl", opts, dtype="float32")
            offline_encode.run_encode(
                minilm, src, tmp_path / "b.jsonl", opts, dtype="float32", max_batch_tokens=512
            )
            sparse = offline_encode.EncodeOptions(("sparse",))
            offline_encode.run_encode(splade, src, tmp_path / "c.jsonl", sparse, dtype="float32")
    assert seen == [8192, 512, 2048]
    a, b = (
        [json.loads(x)["embed"] for x in (tmp_path / n).read_text().splitlines()]
        for n in ("a.jsonl", "b.jsonl")
    )
    got, ref = torch.tensor(a), torch.tensor(b)
    assert float(F.cosine_similarity(got, ref).min()) >= 0.99999  # the batch changes no vector
