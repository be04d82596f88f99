"""Labels and the reranker stage in the vectorizer, without a worker:

* a label's payload value: the top class, or the labels over the threshold (multi-label);
* two classifiers on the default profile's MiniLM backbone both read MiniLM's forward (no engine
  of their own), stacked side by side, and give what each gives in an engine of its own;
* a classifier on another backbone runs in its own engine; a model that is no classifier, or
  a threshold on a single-label one, is refused naming the label;
* the reranker's candidates re-scored, then grouped by document, best first.
"""

from __future__ import annotations

import numpy as np
import pytest

from poolq.wire.search_results import Hit, SearchRequest
from poolq.worker.config.profile import Profile
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.runtime.labels import LabelReader
from poolq.worker.runtime.reranking import group_by_document
from poolq.worker.runtime.vectorizer import Vectorizer
from tests.rerank_checkpoints import build_classifier

TEXTS = ["Refunds are paid within five days.", "We ship to forty countries.", "a", "x " * 200]


def test_a_label_reads_its_slice_as_one_class_or_the_classes_over_the_threshold():
    scores = np.array([0.1, 0.7, 0.2, 0.55, 0.9, 0.3], np.float32)
    one = LabelReader("topic", ("a", "b", "c"), multi_label=False, threshold=0.5)
    assert one.read(scores) == {"label": "b", "score": 0.7}
    many = LabelReader("tags", ("x", "y", "z"), multi_label=True, threshold=0.5, offset=3)
    assert many.read(scores) == [{"label": "y", "score": 0.9}, {"label": "x", "score": 0.55}]
    assert LabelReader("t", ("x",), True, 0.95).read(scores) == []


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory):
    root = tmp_path_factory.mktemp("labels")
    return {
        "topic": build_classifier(root / "topic", ("a", "b", "c"), on_minilm=True, seed=1),
        "tags": build_classifier(
            root / "tags", ("w", "x"), multi_label=True, on_minilm=True, seed=2
        ),
        "apart": build_classifier(root / "apart", ("p", "q"), seed=3),  # a small random BERT
    }


async def own_scores(folder) -> np.ndarray:
    async with AsyncEngine(load_model(ModelConfig(str(folder), dtype="float32"))) as engine:
        return np.stack(
            [r.tensor("classify").numpy() for r in await engine.encode(TEXTS, ["classify"])]
        )


async def test_classifiers_on_the_vectors_backbone_share_its_forward(classifiers):
    labels = {name: {"model": str(f)} for name, f in classifiers.items()}
    labels["tags"]["threshold"] = 0.2
    vec = await Vectorizer.start(Profile.from_dict({"labels": labels}))
    try:
        assert set(vec.engines) == {"bundled:all-minilm-l6-v2", "bundled:splade-tiny",
                                    str(classifiers["apart"])}  # fmt: skip
        out = await vec.encode(TEXTS, [str(i) for i in range(len(TEXTS))])
    finally:
        await vec.stop()
    topic, tags, apart = [await own_scores(classifiers[n]) for n in ("topic", "tags", "apart")]
    for i, done in enumerate(out):
        got = done.labels
        assert got["topic"]["label"] == "abc"[int(topic[i].argmax())]
        assert abs(got["topic"]["score"] - float(topic[i].max())) < 1e-4
        want = sorted(
            ((s, c) for c, s in zip("wx", tags[i], strict=True) if s >= 0.2), reverse=True
        )
        assert [(x["label"], x["score"]) for x in got["tags"]] == [
            (c, round(float(s), 4)) for s, c in want
        ]
        assert got["apart"]["label"] == "pq"[int(apart[i].argmax())]
        assert set(done.vectors) == {"dense", "colbert", "sparse"}


async def test_a_label_on_no_classifier_or_a_threshold_on_one_label_is_refused(classifiers, minilm):
    with pytest.raises(ValueError, match=r"label 'topic': model .* is not a classifier"):
        await Vectorizer.start(Profile.from_dict({"labels": {"topic": {"model": minilm}}}))
    one = {"labels": {"topic": {"model": str(classifiers["apart"]), "threshold": 0.3}}}
    with pytest.raises(ValueError, match="threshold applies to multi-label models"):
        await Vectorizer.start(Profile.from_dict(one))


def hit(doc: str, chunk: int, score: float) -> Hit:
    return Hit(f"{doc}-{chunk}", score, doc, chunk, f"text {doc} {chunk}")


def test_reranked_chunks_are_grouped_by_document_best_first():
    ranked = [
        hit("a", 2, 0.9),
        hit("b", 0, 0.8),
        hit("a", 0, 0.7),
        hit("a", 1, 0.6),
        hit("c", 0, 0.5),
    ]
    grouped = group_by_document(ranked, group_size=2)
    assert [(h.doc_id, h.chunk_index, h.score) for h in grouped] == [
        ("a", 2, 0.9), ("b", 0, 0.8), ("c", 0, 0.5)
    ]  # fmt: skip
    assert [(c.chunk_index, c.score) for c in grouped[0].chunks or []] == [(0, 0.7)]
    assert grouped[1].chunks == [] and grouped[2].chunks == []


def test_the_store_is_asked_for_chunks_enough_of_them_and_no_threshold():
    from poolq.worker.runtime.reranking import Reranker

    r = Reranker("m", engine=None, candidates=30)  # type: ignore[arg-type]
    req = SearchRequest("c", "hybrid", limit=10, group_by="doc_id", score_threshold=0.5)
    asked = r.candidates_request(req)
    assert (asked.limit, asked.group_by, asked.score_threshold, asked.mode) == (
        30,
        None,
        None,
        "hybrid",
    )
    assert r.candidates_request(SearchRequest("c", limit=50)).limit == 50
