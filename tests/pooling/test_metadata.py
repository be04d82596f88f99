import pytest
import torch

from poolq.worker.pooling import PoolingCursor, PoolingMetadata, PoolingParams


def test_prefix_sums_give_first_and_last_rows():
    c = PoolingCursor.build([3, 1, 4])
    assert c.token_starts_cpu.tolist() == [0, 3, 4]
    assert c.last_token_indices_cpu.tolist() == [2, 3, 7]
    assert c.num_tokens == 8
    assert c.is_tiled
    assert c.segment_ids_dev.tolist() == [0, 0, 0, 1, 2, 2, 2, 2]


def test_select_keeps_absolute_rows_and_never_mutates():
    c = PoolingCursor.build([4, 4, 2])
    sub = c.select([1, 2])
    assert sub.num_scheduled_tokens_cpu.tolist() == [4, 2]
    assert sub.token_starts_cpu.tolist() == [4, 8]  # absolute until re-offset
    assert not sub.is_tiled
    shifted = sub.shifted(4)
    assert shifted.token_starts_cpu.tolist() == [0, 4]
    assert shifted.last_token_indices_cpu.tolist() == [3, 5]
    assert shifted.is_tiled
    # the originals are untouched
    assert c.token_starts_cpu.tolist() == [0, 4, 8]
    assert sub.token_starts_cpu.tolist() == [4, 8]
    assert c.select(slice(0, 1)).num_scheduled_tokens_cpu.tolist() == [4]


def test_per_request_shift():
    c = PoolingCursor.build([2, 3], token_starts=[5, 1])
    assert c.shifted(torch.tensor([5, -1])).token_starts_cpu.tolist() == [0, 2]


def test_empty_cursor():
    c = PoolingCursor.build([])
    assert len(c) == 0 and c.num_tokens == 0 and c.is_tiled


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_scheduled_tokens": [0, 2]}, "expected >= 1 per request"),
        ({"num_scheduled_tokens": [3], "token_starts": [0, 3]}, "token_starts: expected 1 entries"),
    ],
)
def test_cursor_rejects_inconsistent_counts(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PoolingCursor.build(**kwargs)


def test_metadata_select_and_token_ids():
    ids = [torch.arange(3), torch.arange(100, 104)]
    md = PoolingMetadata.build(
        [PoolingParams("embed"), PoolingParams("sparse")],
        [3, 4],
        prompt_token_ids=ids,
        request_ids=["a", "b"],
    )
    assert [t.tolist() for t in md.token_ids_cpu()] == [[0, 1, 2], [100, 101, 102, 103]]
    sub = md.select([1])
    assert sub.request_ids == ("b",)
    assert sub.pooling_params[0].task == "sparse"
    assert [t.tolist() for t in sub.token_ids_cpu()] == [[100, 101, 102, 103]]
    with pytest.raises(ValueError, match="request_ids: expected 2 entries"):
        PoolingMetadata(md.pooling_params, md.cursor, request_ids=("x",))


def test_metadata_token_ids_one_per_row():
    cursor = PoolingCursor.build([3, 4])
    params = (PoolingParams("sparse"),) * 2
    with pytest.raises(ValueError, match=r"expected one id per row \(\[3, 4\]\), got \[3, 5\]"):
        PoolingMetadata(params, cursor, (torch.arange(3), torch.arange(5)))
    with pytest.raises(ValueError, match="built without them"):
        PoolingMetadata(params, cursor).token_ids_cpu()
