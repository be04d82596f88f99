import pytest
import torch
from torch.testing import assert_close

from poolq.worker.pooling import (
    AllPool,
    CLSPool,
    LastPool,
    MeanPool,
    PoolingParams,
    PoolingStates,
    StepPool,
)
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


@pytest.mark.parametrize("method", [CLSPool(), MeanPool()])
def test_cls_and_mean_refuse_partial_prefill(method):
    md = metadata([2, 3], prompt_lens=[4, 3])
    with pytest.raises(ValueError, match="partial prefill"):
        method(flat_hidden([2, 3]), md)


def test_last_under_chunked_prefill_reads_the_last_chunk():
    md = metadata([2, 3], prompt_lens=[4, 3])
    h = flat_hidden([2, 3])
    assert_close(LastPool()(h, md), h[[1, 4]])


def test_all_splits_and_caches_across_steps():
    full = flat_hidden([7, 2])
    a, b = full[:7], full[7:]
    states = [PoolingStates(), PoolingStates()]
    params = [PoolingParams("token_embed")] * 2
    # step 1: 4 of 7 rows of request 0, all of request 1
    md1 = metadata([4, 2], params, prompt_lens=[7, 2], pooling_states=states)
    out1 = AllPool()(torch.cat([a[:4], b]), md1)
    assert out1[0] is None
    assert_close(out1[1], b)
    # step 2: the remaining 3 rows
    md2 = metadata(
        [3], params[:1], prompt_lens=[7], num_computed_tokens=[4], pooling_states=states[:1]
    )
    out2 = AllPool()(a[4:], md2)
    assert_close(out2[0], a)
    assert states[0].hidden_states_cache == []


def test_all_without_states_under_chunked_prefill_is_an_error():
    with pytest.raises(ValueError, match="pooling_states"):
        AllPool()(flat_hidden([2]), metadata([2], [PoolingParams("token_embed")], prompt_lens=[3]))


def test_step_keeps_rows_of_the_tag_token():
    lens = [5, 3]
    ids = [torch.tensor([1, 9, 2, 9, 9]), torch.tensor([3, 4, 5])]
    h = flat_hidden(lens)
    out = StepPool(step_tag_id=9)(h, metadata(lens, ids=ids))
    assert_close(out[0], h[[1, 3, 4]])
    assert out[1].shape == (0, 16)
