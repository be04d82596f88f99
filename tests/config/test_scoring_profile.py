"""The profile's ``[reranker]`` and ``[labels]`` tables: what they read, what they refuse (one line
naming the table, key and value), and what the profile version covers (labels, not the
reranker)."""

from __future__ import annotations

import pytest

from poolq.worker.config.profile import Profile
from poolq.worker.config.scoring import DEFAULT_CANDIDATES, LabelConfig, RerankerConfig
from poolq.worker.config.versions import profile_version


def test_the_tables_as_the_contract_writes_them():
    p = Profile.from_dict(
        {
            "reranker": {"model": "BAAI/bge-reranker-v2-m3"},
            "labels": {
                "topic": {"model": "path/to/classifier"},
                "tags": {"model": "path/to/multi", "threshold": 0.4},
            },
        }
    )
    assert p.reranker == RerankerConfig("BAAI/bge-reranker-v2-m3", DEFAULT_CANDIDATES)
    assert DEFAULT_CANDIDATES == 30
    assert p.labels == (
        LabelConfig("topic", "path/to/classifier"),
        LabelConfig("tags", "path/to/multi", 0.4),
    )
    # every chunk goes through the labels' models, not the reranker's
    assert p.models == [
        "bundled:all-minilm-l6-v2", "bundled:splade-tiny", "path/to/classifier", "path/to/multi"
    ]  # fmt: skip
    assert Profile.from_dict({"reranker": {"model": "m", "candidates": 5}}).reranker.candidates == 5


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"reranker": "m"}, r"\[reranker\]: expected a table"),
        ({"reranker": {"model": "m", "top": 3}}, r"\[reranker\]: unknown keys \['top'\]"),
        ({"reranker": {}}, r"\[reranker\] model: expected a folder"),
        ({"reranker": {"model": "m", "candidates": 0}}, r"candidates: expected an integer in 1\.\.1000, got 0"),
        ({"reranker": {"model": "m", "candidates": True}}, "candidates: expected an integer"),
        ({"labels": {"topic": "m"}}, "label 'topic': expected a table"),
        ({"labels": {"topic": {}}}, "label 'topic': model: expected"),
        ({"labels": {"topic": {"model": "m", "k": 1}}}, r"unknown keys \['k'\]"),
        ({"labels": {"topic": {"model": "m", "threshold": 2}}}, "threshold: expected a number in 0..1"),
        ({"labels": {"a.b": {"model": "m"}}}, "label 'a.b': a name is letters"),
        ({"models": {"m": {"classifier_from_token": ["yes"]}}}, "classifier_from_token: expected"),
        ({"models": {"m": {"score_instruction": ""}}}, "score_instruction: expected a non-empty"),
    ],
)  # fmt: skip
def test_bad_tables_are_refused_naming_what_is_wrong(data, message):
    with pytest.raises(ValueError, match=message):
        Profile.from_dict(data)


def test_the_model_options_of_an_llm_reranker_reach_its_model_config():
    p = Profile.from_dict(
        {
            "reranker": {"model": "m"},
            "models": {"m": {"classifier_from_token": ["no", "yes"], "score_instruction": "Find"}},
        }
    )
    cfg = p.model_config("m")
    assert cfg.classifier_from_token == ("no", "yes") and cfg.score_instruction == "Find"


def test_labels_are_part_of_the_version_the_reranker_is_not():
    prints = {"bundled:all-minilm-l6-v2": "a", "bundled:splade-tiny": "b", "c": "x", "d": "y"}
    plain = profile_version(Profile.from_dict(None), prints)
    assert plain == profile_version(Profile.from_dict({"reranker": {"model": "c"}}), prints)
    labelled = profile_version(Profile.from_dict({"labels": {"t": {"model": "c"}}}), prints)
    assert labelled != plain
    assert labelled != profile_version(Profile.from_dict({"labels": {"u": {"model": "c"}}}), prints)
    assert labelled != profile_version(
        Profile.from_dict({"labels": {"t": {"model": "c"}}}), {**prints, "c": "changed weights"}
    )
    threshold = Profile.from_dict({"labels": {"t": {"model": "c", "threshold": 0.3}}})
    assert profile_version(threshold, prints) != labelled
