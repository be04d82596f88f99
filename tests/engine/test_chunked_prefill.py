"""Chunked prefill: a causal model's prompt longer than the batch budget is prefilled over several
batches (KV cache between chunks) and pooled once, equal to the unchunked result, while other
requests share those batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.models.packed_decoder import PackedDecoder
from tests.decoder_checkpoints import build_decoder
from tests.texts import varied_texts

OTHERS = varied_texts(40)[3:23]


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    return build_decoder(tmp_path_factory.mktemp("qwen3c") / "m", "qwen3", hidden=64, layers=2)


@pytest.fixture(scope="module")
def long_text(qwen3):
    tok = load_model(ModelConfig(str(qwen3))).tokenizer
    words = " ".join(f"w{i} the quick brown fox" for i in range(1000))
    ids = tok.encode_batch([words])[0].ids
    assert len(ids) > 3000
    return tok.backend.decode(ids[1:2999])  # ~3,000 tokens


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a.float(), b.float(), dim=-1)


async def encode_all(folder, texts, tasks, budget, **cfg):
    model = load_model(ModelConfig(str(folder), **cfg))
    async with AsyncEngine(model, max_batch_tokens=budget, record_batches=True) as engine:
        out = await engine.encode(texts, tasks)
        return out, engine.stats, engine.runner


@pytest.mark.parametrize(
    ("pooling", "task"), [("LAST", "embed"), ("MEAN", "embed"), ("LAST", "token_embed")]
)
async def test_chunked_equals_unchunked_among_other_requests(qwen3, long_text, pooling, task):
    texts = [*OTHERS[:7], long_text, *OTHERS[7:]]
    ref, _, _ = await encode_all(qwen3, texts, [task], budget=8192, pooling=pooling)
    out, stats, runner = await encode_all(qwen3, texts, [task], budget=512, pooling=pooling)
    long_ref, long_out = ref[7].tensor(task), out[7].tensor(task)
    assert out[7].num_tokens > 2900 and stats.batches >= 6  # 3,000 tokens over 512-token batches
    assert long_out.shape == long_ref.shape
    assert cosine(long_out, long_ref).min() >= 0.99999
    shared = {out[i].batch_index for i in range(len(texts)) if i != 7}
    assert out[7].batch_index in shared or any(  # its chunks ran beside other requests
        n > 1 for n in stats.batch_sizes or []
    )
    for i in range(len(texts)):  # the other requests are unaffected
        assert cosine(out[i].tensor(task), ref[i].tensor(task)).min() >= 0.99999
    assert len(runner.prefills) == 0  # every cache freed


async def test_chunks_share_batches_with_other_requests(qwen3, long_text):
    texts = [long_text, *OTHERS]
    out, stats, _ = await encode_all(qwen3, texts, ["embed"], budget=512)
    assert out[0].batch_index >= 5  # finished after several chunks
    assert max(stats.batch_sizes or [0]) > 1  # chunks did not run alone
    ref, _, _ = await encode_all(qwen3, [long_text], ["embed"], budget=4096)
    assert cosine(out[0].tensor("embed"), ref[0].tensor("embed")) >= 0.99999


def test_decoder_cache_equals_one_forward(qwen3):
    """The packed decoder itself: a sequence fed in 3 chunks with a cache equals one forward."""
    from poolq.worker.engine.models.causal_attention import KVCache

    enc = load_model(ModelConfig(str(qwen3))).encoder
    assert isinstance(enc, PackedDecoder)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 20000, (300,), generator=g)
    other = torch.randint(1000, 20000, (40,), generator=g)
    with torch.inference_mode():
        whole = enc(ids, [300])
        cache = KVCache()
        parts = []
        for a, b in ((0, 100), (100, 250), (250, 300)):
            out = enc(torch.cat([other, ids[a:b]]), [40, b - a], caches=[None, cache])
            parts.append(out[40:])
            assert torch.allclose(out[:40], enc(other, [40]), atol=1e-5)
    assert torch.allclose(torch.cat(parts), whole, atol=1e-4)


async def test_bidirectional_encoder_refuses_over_length_clearly(minilm):
    model = load_model(ModelConfig(minilm))
    async with AsyncEngine(model, max_batch_tokens=128) as engine:
        assert not engine.scheduler.chunked_prefill
        with pytest.raises(ValueError, match="longer than the model's max length 256 tokens"):
            await engine.encode(["word " * 400], ["embed"], truncate=False)
        res = await engine.encode(["word " * 400], ["embed"])  # truncated: one forward, alone
        assert res[0].truncated and res[0].num_tokens == 256


def test_cosine_helper_catches_a_difference():
    a = torch.tensor(np.eye(3), dtype=torch.float32)
    assert cosine(a, a.flip(0)).min() < 0.5
