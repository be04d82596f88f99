"""`poolq encode` as a user runs it: a real process, real models, JSONL in and out."""

import json

import numpy as np
import pytest

from tests.cli_process import poolq
from tests.cpu import needs_vnni


@pytest.fixture
def jsonl(tmp_path):
    def write(lines):
        p = tmp_path / "in.jsonl"
        p.write_text("\n".join(lines) + "\n")
        return p

    return write


def test_encode_dense_and_multivector_in_input_order(minilm, jsonl, tmp_path):
    from sentence_transformers import SentenceTransformer

    texts = [f"document {i}: " + "words " * (i * 7 % 90) for i in range(40)]
    src = jsonl([json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(texts)])
    out = tmp_path / "out.jsonl"
    r = poolq(
        "encode",
        "--model",
        minilm,
        "--task",
        "embed",
        "--task",
        "token_embed",
        "--max-batch-tokens",
        "512",
        str(src),
        "-o",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == [f"d{i}" for i in range(40)]
    assert all(set(row) == {"id", "embed", "token_embed"} for row in rows)
    ref = SentenceTransformer(minilm, device="cpu").encode(texts)
    ours = np.array([row["embed"] for row in rows])
    assert np.abs(ours - ref).max() < 1e-4
    assert all(len(row["token_embed"][0]) == 384 for row in rows)


def test_encode_sparse_format_and_dimensions(splade, minilm, jsonl, tmp_path):
    src = jsonl([json.dumps({"id": 1, "text": "sparse lexical weights"})])
    r = poolq("encode", "--model", splade, "--task", "sparse", str(src))
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["id"] == 1 and set(row) == {"id", "sparse"}
    idx, vals = row["sparse"]["indices"], row["sparse"]["values"]
    assert idx == sorted(idx) and len(idx) == len(vals) > 0 and min(vals) > 0
    r = poolq(
        "encode",
        "--model",
        minilm,
        "--task",
        "embed",
        "--dimensions",
        "64",
        "--no-normalize",
        str(src),
    )
    assert r.returncode == 0, r.stderr
    emb = json.loads(r.stdout)["embed"]
    assert len(emb) == 64 and abs(np.linalg.norm(emb) - 1) > 1e-3


def test_malformed_lines_reported_and_skipped(minilm, jsonl):
    src = jsonl(
        [
            json.dumps({"id": "a", "text": "fine"}),
            "{not json",
            json.dumps({"id": "b"}),
            json.dumps({"id": "c", "text": 42}),
            json.dumps(["x"]),
            json.dumps({"id": "d", "text": "also fine"}),
        ]
    )
    r = poolq("encode", "--model", minilm, str(src))
    assert r.returncode == 1
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["a", "d"]
    assert "line 2: invalid JSON" in r.stderr
    assert "line 3 (id 'b'): missing field 'text'" in r.stderr
    assert "line 4 (id 'c'): field 'text' must be a string, got int" in r.stderr
    assert "line 5: expected an object" in r.stderr
    assert "2 written, 4 skipped" in r.stderr


def test_over_long_input_with_no_truncate_is_skipped_by_name(minilm, jsonl):
    src = jsonl(
        [
            json.dumps({"id": "ok", "text": "short"}),
            json.dumps({"id": "long", "text": "word " * 400}),
        ]
    )
    r = poolq("encode", "--model", minilm, "--no-truncate", str(src))
    assert r.returncode == 1
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["ok"]
    assert "line 2 (id 'long')" in r.stderr and "max length 256" in r.stderr


def test_bad_task_and_missing_model_are_clear_errors(minilm, jsonl, tmp_path):
    src = jsonl([json.dumps({"id": "a", "text": "x"})])
    r = poolq("encode", "--model", minilm, "--task", "sparse", str(src))
    assert r.returncode == 2
    assert (
        "task 'sparse' is not supported by this model; supported tasks: embed, token_embed"
        in r.stderr
    )
    r = poolq("encode", "--model", minilm, "--task", "rerank", str(src))
    assert r.returncode == 2 and "unknown task 'rerank'" in r.stderr
    r = poolq("encode", "--model", str(tmp_path / "nope"), str(src))
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = poolq("encode", "--model", "someorg/some-model", str(src), timeout=120)
    assert r.returncode == 2 and "someorg/some-model" in r.stderr and "HF_HUB_OFFLINE" in r.stderr


@needs_vnni
def test_int8_report_quality_compares_with_float32_on_the_users_file(minilm, jsonl, tmp_path):
    texts = [f"passage {i}: " + "the quick brown fox " * (i % 13 + 1) for i in range(30)]
    src = jsonl([json.dumps({"id": i, "text": t}) for i, t in enumerate(texts)])
    out = tmp_path / "out.jsonl"
    r = poolq(
        "encode", "--model", minilm, "--dtype", "int8", "--report-quality", str(src), "-o", str(out)
    )
    assert r.returncode == 0, r.stderr
    assert (
        "quality gate (built-in sample): int8 vs float32 on 42 texts: embed: min_cosine" in r.stderr
    )
    line = next(x for x in r.stderr.splitlines() if "this file:" in x)
    assert "int8 vs float32 on 30 texts: embed: min_cosine" in line and line.endswith("passed")
    # the figures are those of the written (int8) vectors against a float32 run
    from sentence_transformers import SentenceTransformer

    ref = SentenceTransformer(minilm, device="cpu").encode(texts)
    ours = np.array([json.loads(x)["embed"] for x in out.read_text().splitlines()])
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    reported = float(line.split("min_cosine ")[1].split()[0])
    assert abs(reported - cos.min()) < 1e-3 and np.abs(ours - ref).max() > 1e-3


def test_report_quality_needs_int8(minilm, jsonl):
    src = jsonl([json.dumps({"id": 1, "text": "x"})])
    r = poolq("encode", "--model", minilm, "--report-quality", str(src))
    assert r.returncode == 2
    assert (
        "--report-quality compares int8 with float32: use it with --dtype int8, got --dtype float32"
        in r.stderr
    )
