import pytest
import torch

from poolq.worker.pooling import PoolingCursor, PoolingMetadata, PoolingParams


def test_prefix_sums_give_first_and_last_rows():
    c = PoolingCursor.build([3, 1, 4])
    assert c.first_token_indices_cpu.tolist() == [0, 3, 4]
    assert c.last_token_indices_cpu.tolist() == [2, 3, 7]
    assert c.num_tokens == 8
    assert not c.partial_prefill
    assert c.finished_mask.tolist() == [True, True, True]
    assert c.is_tiled
    assert c.segment_ids_dev.tolist() == [0, 0, 0, 1, 2, 2, 2, 2]


def test_partial_prefill_and_finished_mask():
    # request 0: first chunk of 10 (unfinished); request 1: last chunk (4 of 9, 5 computed before)
    c = PoolingCursor.build([4, 4, 2], prompt_lens=[10, 9, 2], num_computed_tokens=[0, 5, 0])
    assert c.partial_prefill
    assert c.finished_mask.tolist() == [False, True, True]
    assert c.seq_lens_cpu.tolist() == [4, 9, 2]


def test_select_recomputes_flags_and_never_mutates():
    c = PoolingCursor.build([4, 4, 2], prompt_lens=[10, 4, 2])
    assert c.partial_prefill
    sub = c.select([1, 2])
    assert not sub.partial_prefill  # the partial request is not in the slice
    assert sub.finished_mask.tolist() == [True, True]
    assert sub.first_token_indices_cpu.tolist() == [4, 8]  # absolute until re-offset
    assert not sub.is_tiled
    shifted = sub.shifted(4)
    assert shifted.first_token_indices_cpu.tolist() == [0, 4]
    assert shifted.last_token_indices_cpu.tolist() == [3, 5]
    assert shifted.is_tiled
    # the originals are untouched
    assert c.first_token_indices_cpu.tolist() == [0, 4, 8]
    assert sub.first_token_indices_cpu.tolist() == [4, 8]
    assert c.partial_prefill
    assert c.select(slice(0, 1)).partial_prefill


def test_per_request_shift():
    c = PoolingCursor.build([2, 3], token_starts=[5, 1])
    assert c.shifted(torch.tensor([5, -1])).first_token_indices_cpu.tolist() == [0, 2]


def test_empty_cursor():
    c = PoolingCursor.build([])
    assert len(c) == 0 and c.num_tokens == 0 and not c.partial_prefill and c.is_tiled


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_scheduled_tokens": [0, 2]}, "expected >= 1 per request"),
        ({"num_scheduled_tokens": [3], "prompt_lens": [2]}, "scheduled past the prompt"),
        ({"num_scheduled_tokens": [3], "prompt_lens": [3, 4]}, "prompt_lens: expected 1 entries"),
    ],
)
def test_cursor_rejects_inconsistent_counts(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PoolingCursor.build(**kwargs)


def test_metadata_select_and_step_token_ids():
    ids = [torch.arange(10), torch.arange(100, 104)]
    md = PoolingMetadata.build(
        [PoolingParams("embed"), PoolingParams("sparse")],
        [3, 4],
        prompt_lens=[10, 4],
        num_computed_tokens=[5, 0],
        prompt_token_ids=ids,
        request_ids=["a", "b"],
    )
    assert [t.tolist() for t in md.step_token_ids_cpu()] == [[5, 6, 7], [100, 101, 102, 103]]
    sub = md.select([1])
    assert sub.request_ids == ("b",)
    assert sub.pooling_params[0].task == "sparse"
    assert sub.request_name(0) == "'b'"
    with pytest.raises(ValueError, match="request_ids: expected 2 entries"):
        PoolingMetadata(md.pooling_params, md.cursor, request_ids=("x",))
