"""Inference-free sparse queries: a SPLADE folder that ships ``idf.json`` encodes a query as its
non-special tokens weighted by the table (OpenSearch doc-v2/v3-distill), without a forward."""

from __future__ import annotations

import json
import shutil

import pytest

from poolq.worker.config.profile import Profile
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.runtime.vectorizer import Vectorizer


@pytest.fixture(scope="module")
def idf_splade(splade, tmp_path_factory):
    folder = tmp_path_factory.mktemp("idf") / "m"
    shutil.copytree(splade, folder)
    (folder / "idf.json").write_text(
        json.dumps({"harbour": 3.5, "crane": 2.25, "the": 0.1, "[CLS]": 9.0, "where": 1.0})
    )
    return folder


def test_query_is_weighted_tokens(idf_splade, splade):
    model = load_model(ModelConfig(str(idf_splade)))
    assert load_model(ModelConfig(splade)).query_idf is None  # no idf.json: none
    tok = model.tokenizer.backend
    ids = model.tokenizer.encode_batch(["where is the harbour crane, the crane"])[0].ids
    got = model.query_idf.encode(ids)
    want = {
        tok.token_to_id(t): w
        for t, w in (("harbour", 3.5), ("crane", 2.25), ("the", 0.1), ("where", 1.0))
    }
    assert dict(zip(got.indices.tolist(), got.values.tolist(), strict=True)) == pytest.approx(want)
    top = model.query_idf.encode(ids, top_k=2)
    assert sorted(top.values.tolist()) == [2.25, 3.5]


async def test_vectorizer_queries_skip_the_forward(idf_splade):
    profile = Profile.from_dict(
        {"vectors": {"sparse": {"model": str(idf_splade), "task": "sparse"}}}
    )
    v = await Vectorizer.start(profile, device="cpu")
    try:
        batches = v.engines[str(idf_splade)].query_stats.batches
        q = await v.encode_query("where is the harbour crane", ["sparse"])
        assert sorted(q["sparse"].values) == pytest.approx([0.1, 1.0, 2.25, 3.5])
        assert v.engines[str(idf_splade)].query_stats.batches == batches  # no forward ran
    finally:
        await v.stop()
