import pytest
import torch
from torch.testing import assert_close

from poolq.worker.pooling import PoolingParams, SparseEmbedding, SpladePooler
from poolq.worker.pooling import splade as splade_mod
from tests.pooling.builders import HIDDEN, VOCAB, flat_hidden, metadata, seeded_linear, token_ids

LENS = [4, 1, 9, 3]


def reference(hidden, lens, head, mode, ids=None, remove=()):
    """Hand formula, per sequence: log1p(relu(logits)) then max/sum over tokens (no identity)."""
    out = []
    for i, h in enumerate(torch.split(hidden, lens)):
        w = torch.log1p(torch.relu(head(h)))  # [L, V]
        if remove:
            keep = ~torch.isin(ids[i], torch.tensor(remove))
            w = w[keep]
        if w.shape[0] == 0:
            out.append(torch.zeros(VOCAB))
            continue
        out.append(w.amax(0) if mode == "max" else w.sum(0))
    return out


def check(out, ref, top_k=None):
    for o, r in zip(out, ref, strict=True):
        assert isinstance(o, SparseEmbedding)
        assert o.indices.dtype == torch.int32 and o.values.dtype == torch.float32
        assert torch.all(o.indices[1:] > o.indices[:-1]), "indices sorted, unique"
        assert torch.all(o.values > 0), "zeros dropped"
        if top_k is None:
            assert_close(o.to_dense(VOCAB), r, rtol=1e-6, atol=1e-6)
        else:
            expected_idx = torch.topk(r, min(top_k, int((r > 0).sum()))).indices.sort().values
            assert o.indices.tolist() == expected_idx.tolist()
            assert_close(o.values, r[expected_idx])


@pytest.mark.parametrize("mode", ["max", "sum"])
def test_splade_matches_formula(mode):
    head = seeded_linear(HIDDEN, VOCAB, 0)
    h = flat_hidden(LENS)
    out = SpladePooler(head, VOCAB, mode=mode)(h, metadata(LENS, [PoolingParams("sparse")] * 4))
    check(out, reference(h, LENS, head, mode))


@pytest.mark.parametrize("mode", ["max", "sum"])
def test_splade_bounded_chunks_give_same_result(monkeypatch, mode):
    head = seeded_linear(HIDDEN, VOCAB, 0)
    h = flat_hidden(LENS)
    md = metadata(LENS, [PoolingParams("sparse")] * 4)
    monkeypatch.setattr(splade_mod, "SPLADE_MIN_CHUNK_ROWS", 1)
    for rows in (1, 2, 5):  # chunks that cut sequences in the middle
        monkeypatch.setattr(splade_mod, "SPLADE_CPU_CHUNK_BYTES", rows * VOCAB * 4)
        monkeypatch.setattr(splade_mod, "SPLADE_CHUNK_BYTES", rows * VOCAB * 4)
        assert splade_mod.chunk_rows(h.device, VOCAB) == rows
        check(SpladePooler(head, VOCAB, mode=mode)(h, md), reference(h, LENS, head, mode))


def test_splade_chunk_rows_per_device():
    cpu, vocab = torch.device("cpu"), 30522
    assert splade_mod.chunk_rows(cpu, vocab) == (8 << 20) // (vocab * 4)  # 68: stays in cache
    assert splade_mod.chunk_rows(torch.device("cuda"), vocab) == (32 << 20) // (vocab * 4)
    assert splade_mod.chunk_rows(cpu, 250_000) == 32  # a wide vocabulary still feeds the GEMM


@pytest.mark.parametrize("mode", ["max", "sum"])
def test_splade_removes_special_tokens_by_id(mode):
    head = seeded_linear(HIDDEN, VOCAB, 0)
    h = flat_hidden(LENS)
    ids = token_ids(LENS)
    ids[1] = torch.tensor([2])  # a sequence made only of a removed token -> empty vector
    ids[0][0], ids[2][0], ids[2][-1] = 2, 2, 3
    pooler = SpladePooler(head, VOCAB, mode=mode, remove_token_ids=[2, 3])
    assert pooler.requires_token_ids
    out = pooler(h, metadata(LENS, [PoolingParams("sparse")] * 4, ids=ids))
    check(out, reference(h, LENS, head, mode, ids, remove=(2, 3)))
    assert len(out[1]) == 0


def test_splade_top_k_per_request_and_default():
    head = seeded_linear(HIDDEN, VOCAB, 0)
    h = flat_hidden(LENS)
    params = [
        PoolingParams("sparse", top_k=3),
        PoolingParams("sparse"),
        PoolingParams("sparse", top_k=1),
        PoolingParams("sparse"),
    ]
    out = SpladePooler(head, VOCAB, top_k=5)(h, metadata(LENS, params))
    ref = reference(h, LENS, head, "max")
    for o, r, k in zip(out, ref, [3, 5, 1, 5], strict=True):
        check([o], [r], top_k=k)


def test_splade_empty_batch_and_bad_mode():
    head = seeded_linear(HIDDEN, VOCAB, 0)
    pooler = SpladePooler(head, VOCAB)
    assert pooler(torch.zeros(0, HIDDEN), metadata([], [])) == []
    with pytest.raises(ValueError, match="mode must be"):
        SpladePooler(head, VOCAB, mode="mean")  # type: ignore[arg-type]
