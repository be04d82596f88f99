"""``poolq encode PAIRS.jsonl --model M --task score``: lines ``{"id", "query", "text"}`` in,
``{"id", "score": float}`` out, one per pair, in input order, the scores those of
sentence-transformers' ``CrossEncoder.predict`` on the same random cross-encoder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.cli_process import poolq
from tests.rerank_checkpoints import build_cross_encoder

pytestmark = pytest.mark.slow  # the CLI in a subprocess, a model built and loaded


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory):
    return build_cross_encoder(tmp_path_factory.mktemp("ce") / "bert", "bert", seed=21)


def test_score_writes_one_score_per_pair_in_order(tmp_path, cross_encoder):
    from sentence_transformers import CrossEncoder

    pairs = [(f"query {i}", "text " * (1 + 37 * i % 90)) for i in range(40)]
    src = tmp_path / "pairs.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": i, "query": q, "text": t}) + "\n" for i, (q, t) in enumerate(pairs)
        )
    )
    out = poolq("encode", str(src), "--model", str(cross_encoder), "--task", "score")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [set(r) for r in rows] == [{"id", "score"}] * len(pairs)
    assert [r["id"] for r in rows] == list(range(len(pairs)))
    assert all(isinstance(r["score"], float) for r in rows)
    want = CrossEncoder(str(cross_encoder), device="cpu").predict(pairs, batch_size=32)
    assert np.abs(np.array([r["score"] for r in rows]) - want).max() < 1e-4


def test_score_line_errors_name_the_line_and_field(tmp_path, cross_encoder):
    src = tmp_path / "pairs.jsonl"
    src.write_text(
        json.dumps({"id": "a", "query": "q", "text": "t"}) + "\n"
        + json.dumps({"id": "b", "text": "no query"}) + "\n"
        + json.dumps({"id": "c", "query": 3, "text": "t"}) + "\n"
    )  # fmt: skip
    out = poolq("encode", str(src), "--model", str(cross_encoder), "--task", "score")
    assert out.returncode == 1
    assert [json.loads(line)["id"] for line in out.stdout.splitlines()] == ["a"]
    assert "line 2 (id 'b'): missing field 'query'" in out.stderr
    assert "line 3 (id 'c'): field 'query' must be a string" in out.stderr


def test_score_is_refused_beside_another_task_and_on_a_model_that_scores_nothing(tmp_path, minilm):
    src = tmp_path / "pairs.jsonl"
    src.write_text(json.dumps({"id": "a", "query": "q", "text": "t"}) + "\n")
    out = poolq("encode", str(src), "--model", minilm, "--task", "score", "--task", "embed")
    assert out.returncode == 2 and "score reads (query, text) pairs" in out.stderr
    out = poolq("encode", str(src), "--model", minilm, "--task", "score")
    assert out.returncode == 2 and "task 'score' is not supported by this model" in out.stderr
