"""DispatchPooler: mixed batches equal each request pooled alone; the cursor re-offset matters."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from poolq.worker.pooling import (
    DispatchPooler,
    PoolingCursor,
    PoolingMetadata,
    PoolingParams,
    SparseEmbedding,
)
from tests.pooling.builders import (
    EMBED_DIM,
    HIDDEN,
    flat_hidden,
    four_task_pooler,
    metadata,
    token_ids,
)

TASKS = ["embed", "classify", "sparse", "token_embed"]


def assert_same(a, b):
    if isinstance(a, SparseEmbedding):
        assert isinstance(b, SparseEmbedding)
        assert a.indices.tolist() == b.indices.tolist()
        assert_close(a.values, b.values, rtol=1e-6, atol=1e-6)
    else:
        assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
        assert_close(a, b, rtol=1e-6, atol=1e-6)


def alone(pooler, hidden, md, i):
    """Pool request i by itself: its rows only, a one-request metadata."""
    start = int(md.cursor.token_starts_cpu[i])
    n = int(md.cursor.num_scheduled_tokens_cpu[i])
    ids = None if md.prompt_token_ids_cpu is None else [md.prompt_token_ids_cpu[i]]
    single = PoolingMetadata.build([md.pooling_params[i]], [n], prompt_token_ids=ids)
    return pooler(hidden[start : start + n], single)[0]


@st.composite
def mixed_batches(draw):
    n = draw(st.integers(1, 40))
    lens = draw(st.lists(st.integers(1, 300), min_size=n, max_size=n))
    params = []
    for _ in range(n):
        task = draw(st.sampled_from(TASKS))
        kw = {"use_activation": draw(st.sampled_from([None, True, False]))}
        if task == "embed":
            kw["dimensions"] = draw(st.one_of(st.none(), st.integers(1, EMBED_DIM)))
        if task == "sparse":
            kw["top_k"] = draw(st.one_of(st.none(), st.integers(1, 50)))
        params.append(PoolingParams(task, **kw))
    seed = draw(st.integers(0, 2**16))
    return lens, params, seed


POOLERS = {m: four_task_pooler(embed_method=m, remove_ids=[1, 2]) for m in ("CLS", "LAST", "MEAN")}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=mixed_batches(), method=st.sampled_from(["CLS", "LAST", "MEAN"]))
def test_mixed_batch_equals_each_request_alone(batch, method):
    lens, params, seed = batch
    pooler = POOLERS[method]
    hidden = flat_hidden(lens, seed=seed)
    md = metadata(lens, params, ids=token_ids(lens, seed=seed))
    pooler.validate(md.pooling_params)
    outputs = pooler(hidden, md)
    assert len(outputs) == len(lens)
    for i, out in enumerate(outputs):
        assert_same(out, alone(pooler, hidden, md, i))


def test_sorted_batch_slices_are_views(monkeypatch):
    """Sorted by task, each group is one contiguous slice: no gather (index_select) of rows."""
    lens = [3, 5, 2, 4]
    params = [PoolingParams(t) for t in ["classify", "classify", "embed", "token_embed"]]
    pooler = four_task_pooler()
    hidden = flat_hidden(lens)
    md = metadata(lens, params, ids=token_ids(lens))
    seen = []
    orig = DispatchPooler._slice_group

    def spy(self, h, group_md):
        gh, gmd = orig(self, h, group_md)
        seen.append((gh.data_ptr() - h.data_ptr()) // (h.element_size() * HIDDEN))
        return gh, gmd

    monkeypatch.setattr(DispatchPooler, "_slice_group", spy)
    pooler(hidden, md)
    assert seen == [0, 8, 10]  # row offsets of the classify, embed and token_embed groups


def test_requests_sharing_rows_one_forward_several_tasks():
    """One text, three tasks over the same rows (the engine's "one forward, several outputs")."""
    lens = [6, 4]
    hidden = flat_hidden(lens)
    ids = token_ids(lens)
    pooler = four_task_pooler()
    tasks = ["embed", "sparse", "token_embed"]
    params = [PoolingParams(t) for t in tasks for _ in lens]
    starts = [0, 6] * 3
    cursor = PoolingCursor.build([6, 4] * 3, token_starts=starts)
    md = PoolingMetadata(tuple(params), cursor, tuple(ids * 3))
    outputs = pooler(hidden, md)
    for k, out in enumerate(outputs):
        i = k % 2
        single_md = metadata([lens[i]], [params[k]], ids=[ids[i]])
        assert_same(out, pooler(hidden[starts[k] : starts[k] + lens[i]], single_md)[0])


class NoReoffset(DispatchPooler):
    """DispatchPooler broken on purpose, for these tests only: each group gets its own rows, but
    its cursor keeps the batch's absolute row indices (the re-offset is skipped)."""

    def _slice_group(self, hidden, md):
        group_hidden, _reoffset_md = super()._slice_group(hidden, md)
        return group_hidden, md


def broken(pooler: DispatchPooler) -> NoReoffset:
    return NoReoffset(pooler.poolers_by_task)  # the same sub-poolers and weights


def differs(a, b) -> bool:
    try:
        assert_same(a, b)
    except AssertionError:
        return True
    return False


def one_row(pooler, hidden, row, params):
    """What a CLS-pooled request yields when its cursor points at ``row`` of ``hidden``."""
    return pooler(hidden[row : row + 1], metadata([1], [params]))[0]


@pytest.mark.parametrize("method", ["CLS", "LAST"])
def test_without_reoffset_a_group_reads_past_its_rows(method):
    """embed's group (requests 1 and 3) has 9 rows, but request 3's absolute rows are 10..13."""
    lens = [3, 5, 2, 4, 6]
    params = [PoolingParams(t) for t in ["classify", "embed", "sparse", "embed", "token_embed"]]
    pooler = four_task_pooler(embed_method=method)
    hidden = flat_hidden(lens)
    md = metadata(lens, params, ids=token_ids(lens))
    for i, out in enumerate(pooler(hidden, md)):  # with the re-offset: all equal
        assert_same(out, alone(pooler, hidden, md, i))
    with pytest.raises(IndexError, match="index out of range"):
        broken(pooler)(hidden, md)


def test_without_reoffset_a_group_reads_other_rows():
    """classify's group is rows 1..9; its cursor still says rows 1 and 5, which are rows 2 and 6
    of the batch once the group is sliced: both requests pool the wrong row."""
    lens = [1, 4, 5]
    params = [PoolingParams(t) for t in ["sparse", "classify", "classify"]]
    pooler = four_task_pooler()
    hidden = flat_hidden(lens)
    md = metadata(lens, params, ids=token_ids(lens))
    right = pooler(hidden, md)
    wrong = broken(pooler)(hidden, md)
    for i, read_row in [(1, 2), (2, 6)]:
        assert_same(right[i], alone(pooler, hidden, md, i))
        assert differs(wrong[i], right[i])
        assert_same(wrong[i], one_row(pooler, hidden, read_row, params[i]))


def cls_request(draw, task):
    """Params of a CLS-pooled request (``POOLERS["CLS"]``: embed or classify) that a wrong row
    always changes (a 1-d unit vector is +-1: a wrong row may give the same one)."""
    kw = {"use_activation": draw(st.sampled_from([None, True, False]))}
    if task == "embed":
        kw["dimensions"] = draw(st.one_of(st.none(), st.integers(2, EMBED_DIM)))
    return PoolingParams(task, **kw)


@st.composite
def batches_reading_past_a_group(draw):
    """A mixed batch, then a last request ``w``: CLS-pooled, of another task than request 0, and
    no longer than request 0. ``w``'s group leaves out request 0, so the rows outside the group
    (>= len 0 >= len w) are at least ``w``'s length: ``w``'s absolute first row,
    ``total - len w``, is at or past the end of the group's rows."""
    lens, params, seed = draw(mixed_batches())
    task = draw(st.sampled_from([t for t in ("embed", "classify") if t != params[0].task]))
    lens.append(draw(st.integers(1, lens[0])))
    params.append(cls_request(draw, task))
    return lens, params, seed


@st.composite
def batches_reading_other_rows(draw):
    """sparse/token_embed requests (``offset`` rows, at least one), then a group of one
    CLS-pooled task whose last request is longer than ``offset``, then more sparse/token_embed.
    Without the re-offset the group's cursor still points ``offset`` rows into the group, and the
    last request's row ``offset + (rows of the group - its length)`` is inside the group: every
    request of the group pools the row ``offset`` rows after its own first row."""

    def others(min_size):
        n = draw(st.integers(min_size, 8))
        tasks = [draw(st.sampled_from(["sparse", "token_embed"])) for _ in range(n)]
        return [draw(st.integers(1, 60)) for _ in tasks], [PoolingParams(t) for t in tasks]

    task = draw(st.sampled_from(["embed", "classify"]))
    before_lens, before_params = others(1)
    offset = sum(before_lens)
    group_lens = draw(st.lists(st.integers(1, 60), max_size=6))
    group_lens.append(draw(st.integers(offset + 1, offset + 60)))
    group_params = [cls_request(draw, task) for _ in group_lens]
    after_lens, after_params = others(0)
    lens = before_lens + group_lens + after_lens
    params = before_params + group_params + after_params
    return lens, params, draw(st.integers(0, 2**16)), offset


def check_with_reoffset(pooler, hidden, md):
    right = pooler(hidden, md)
    assert len(right) == len(md)
    for i, out in enumerate(right):
        assert_same(out, alone(pooler, hidden, md, i))
    return right


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches_reading_past_a_group())
def test_without_reoffset_property_reads_past_a_group(batch):
    """The real pooler equals pooling alone; without the re-offset the last request's cursor
    points past its group's rows."""
    lens, params, seed = batch
    pooler = POOLERS["CLS"]
    hidden = flat_hidden(lens, seed=seed)
    md = metadata(lens, params, ids=token_ids(lens, seed=seed))
    check_with_reoffset(pooler, hidden, md)
    with pytest.raises(IndexError, match="index out of range"):
        broken(pooler)(hidden, md)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches_reading_other_rows())
def test_without_reoffset_property_reads_other_rows(batch):
    """The real pooler equals pooling alone; without the re-offset every request of the CLS
    group pools the row ``offset`` rows after its own, not its own."""
    lens, params, seed, offset = batch
    pooler = POOLERS["CLS"]
    hidden = flat_hidden(lens, seed=seed)
    md = metadata(lens, params, ids=token_ids(lens, seed=seed))
    right = check_with_reoffset(pooler, hidden, md)
    wrong = broken(pooler)(hidden, md)
    group = [i for i, p in enumerate(params) if p.task in ("embed", "classify")]
    assert group  # the strategy always builds one
    for i in group:
        row = int(md.cursor.token_starts_cpu[i]) + offset
        assert differs(wrong[i], right[i])
        assert_same(wrong[i], one_row(pooler, hidden, row, params[i]))


def test_single_task_fast_path_and_empty_batch():
    pooler = four_task_pooler()
    lens = [2, 3]
    hidden = flat_hidden(lens)
    md = metadata(lens, [PoolingParams("embed")] * 2)
    out = pooler(hidden, md)
    assert [o.shape for o in out] == [(EMBED_DIM,), (EMBED_DIM,)]
    assert pooler(torch.zeros(0, HIDDEN), metadata([], [])) == []
