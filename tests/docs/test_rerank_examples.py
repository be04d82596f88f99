"""The "Rerankers and labels" examples of the searching page, run against a worker whose profile
names a reranker (a random MiniLM-L6 cross-encoder, ``tests/rerank_checkpoints.py``): what they
print is then the reranker's model and stage (``test_docs_examples.py`` runs them on the
default profile, where both are None)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.docs.markdown_blocks import DOCS, blocks
from tests.rerank_checkpoints import build_minilm_cross_encoder

pytestmark = pytest.mark.slow
SECTION = "## Rerankers and labels"


def section_blocks(page: str, lang: str):
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, end if end >= 0 else None)
    return [b for b in blocks(DOCS / page, lang) if first <= b.line <= last]


def test_the_section_has_a_python_example():
    assert section_blocks("searching.md", "python")


def test_the_searching_example_runs_on_a_reranked_profile(tmp_path):
    from poolq.worker.dev.local_redis import LocalRedis
    from poolq.worker.dev.local_worker import WorkerProcess

    model = build_minilm_cross_encoder(tmp_path / "reranker")
    config = tmp_path / "poolq.toml"
    config.write_text(f'[reranker]\nmodel = "{model}"\n')
    with (
        LocalRedis(tmp_path / "redis") as redis,
        WorkerProcess(redis.url, tmp_path / "qdrant", "--config", str(config)),
    ):
        for block in section_blocks("searching.md", "python"):
            out = subprocess.run(
                [sys.executable, "-c", block.body], cwd=tmp_path, capture_output=True,
                text=True, timeout=300, env={**os.environ, "POOLQ_REDIS_URL": redis.url},
            )  # fmt: skip
            assert out.returncode == 0, f"{block.where}:\n{out.stderr}"
            reranker, seconds = out.stdout.split()[:2]
            assert reranker == str(model) and float(seconds) > 0, out.stdout
