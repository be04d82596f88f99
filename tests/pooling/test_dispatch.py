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


@pytest.mark.parametrize("method", ["CLS", "LAST"])
def test_without_reoffset_mixed_batches_go_wrong(monkeypatch, method):
    """The same property with the cursor re-offset switched off: it fails."""
    lens = [3, 5, 2, 4, 6]
    params = [PoolingParams(t) for t in ["classify", "embed", "sparse", "embed", "token_embed"]]
    pooler = four_task_pooler(embed_method=method)
    hidden = flat_hidden(lens)
    md = metadata(lens, params, ids=token_ids(lens))
    for i, out in enumerate(pooler(hidden, md)):  # with the re-offset: all equal
        assert_same(out, alone(pooler, hidden, md, i))

    monkeypatch.setattr(DispatchPooler, "reoffset_cursor", False)
    mismatches = 0
    try:
        outputs = pooler(hidden, md)
    except (IndexError, RuntimeError):
        return  # reading rows past the group's slice is a failure too
    for i, out in enumerate(outputs):
        try:
            assert_same(out, alone(pooler, hidden, md, i))
        except AssertionError:
            mismatches += 1
    assert mismatches > 0


@settings(max_examples=25, deadline=None)
@given(batch=mixed_batches())
def test_without_reoffset_property_fails(batch):
    """Hypothesis view of the same claim: any mixed batch whose non-first group is pooled by
    CLS/LAST/SPLADE differs from pooling alone once the re-offset is disabled."""
    lens, params, seed = batch
    tasks = [p.task for p in params]
    first_task = tasks[0]
    later = [
        i
        for i, (t, p) in enumerate(zip(tasks, params, strict=True))
        if t != first_task
        and t in ("embed", "classify", "sparse")
        and p.dimensions != 1  # a 1-d unit vector is +-1
    ]
    if not later:
        return
    pooler = POOLERS["LAST"]
    hidden = flat_hidden(lens, seed=seed)
    md = metadata(lens, params, ids=token_ids(lens, seed=seed))
    DispatchPooler.reoffset_cursor = False
    try:
        try:
            outputs = pooler(hidden, md)
        except (IndexError, RuntimeError):
            return
        diffs = 0
        for i in later:
            ref = alone(pooler, hidden, md, i)
            if isinstance(ref, SparseEmbedding) and len(ref) == 0:
                continue  # only removed tokens: empty either way
            try:
                assert_same(outputs[i], ref)
            except AssertionError:
                diffs += 1
        checked = [
            i
            for i in later
            if not (isinstance(r := alone(pooler, hidden, md, i), SparseEmbedding) and len(r) == 0)
        ]
        assert diffs > 0 or not checked
    finally:
        DispatchPooler.reoffset_cursor = True


def test_single_task_fast_path_and_empty_batch():
    pooler = four_task_pooler()
    lens = [2, 3]
    hidden = flat_hidden(lens)
    md = metadata(lens, [PoolingParams("embed")] * 2)
    out = pooler(hidden, md)
    assert [o.shape for o in out] == [(EMBED_DIM,), (EMBED_DIM,)]
    assert pooler(torch.zeros(0, HIDDEN), metadata([], [])) == []
