import pytest
import torch
from torch.testing import assert_close

from poolq.worker.pooling import AllPool, CLSPool, LastPool, MeanPool, PoolingParams
from poolq.worker.pooling import methods as methods_mod
from tests.pooling.builders import flat_hidden, metadata

LENS = [3, 1, 5, 2]


def split(hidden, lens):
    return list(torch.split(hidden, lens))


def test_cls_and_last_pick_first_and_last_rows():
    h = flat_hidden(LENS)
    md = metadata(LENS)
    assert_close(CLSPool()(h, md), torch.stack([s[0] for s in split(h, LENS)]))
    assert_close(LastPool()(h, md), torch.stack([s[-1] for s in split(h, LENS)]))


def test_mean_matches_formula():
    h = flat_hidden(LENS)
    assert_close(MeanPool()(h, metadata(LENS)), torch.stack([s.mean(0) for s in split(h, LENS)]))


def test_one_token_sequences():
    lens = [1, 1, 1]
    h = flat_hidden(lens)
    md = metadata(lens)
    for method in (CLSPool(), LastPool(), MeanPool()):
        assert_close(method(h, md), h)
    assert [t.tolist() for t in AllPool()(h, md)] == [[r.tolist()] for r in h]


@pytest.mark.parametrize("method", [CLSPool(), LastPool(), MeanPool()])
def test_empty_batch(method):
    h = torch.zeros(0, 16)
    out = method(h, metadata([]))
    assert out.shape == (0, 16)
    assert AllPool()(h, metadata([])) == []


def test_mean_accumulates_in_fp32_in_small_chunks(monkeypatch):
    lens = [37, 1, 64, 5]
    h32 = flat_hidden(lens, width=8) * 100 + 1000  # large offset: bf16 accumulation would drift
    h = h32.to(torch.bfloat16)
    expected = torch.stack([s.double().mean(0) for s in split(h, lens)]).float()
    monkeypatch.setattr(methods_mod, "MEAN_CHUNK_BYTES", 8 * 4 * 3)  # 3 rows per chunk
    out = MeanPool()(h, metadata(lens))
    assert out.dtype == torch.float32
    assert_close(out, expected, rtol=1e-6, atol=1e-4)
    monkeypatch.setattr(methods_mod, "MEAN_CHUNK_BYTES", 1)  # 1 row per chunk
    assert_close(MeanPool()(h, metadata(lens)), expected, rtol=1e-6, atol=1e-4)
    # the naive bf16 sum is visibly worse: the test would notice a bf16 accumulator
    naive = torch.stack([s.sum(0) / s.shape[0] for s in split(h, lens)]).float()
    assert (naive - expected).abs().max() > 1e-2


def test_all_returns_each_requests_rows():
    h = flat_hidden(LENS)
    out = AllPool()(h, metadata(LENS, [PoolingParams("token_embed")] * len(LENS)))
    assert [o.shape[0] for o in out] == LENS
    for o, s in zip(out, split(h, LENS), strict=True):
        assert_close(o, s)
