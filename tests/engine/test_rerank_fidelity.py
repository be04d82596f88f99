"""Rerankers and classifiers against the architectures' own libraries, random weights in the real
layouts (``tests/rerank_checkpoints.py``), fp32, to 1e-4:

* cross-encoders (BERT, XLM-R, DistilBERT, ModernBERT): ``AsyncEngine.score`` against
  sentence-transformers ``CrossEncoder.predict`` (its default activation: a sigmoid);
* the Qwen3-Reranker form: against transformers ``AutoModelForCausalLM`` with the model card's
  formula (its prompt, the last token's "yes" and "no" logits, ``log_softmax`` then ``exp``);
* classifiers: ``classify`` against ``AutoModelForSequenceClassification`` with the activation
  the config implies (softmax, or a sigmoid per label for multi-label).

The BERT pairs carry token type ids; a test drops them on purpose and watches the match fail.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.checkpoints.pair_forms import (
    QWEN3_RERANKER_INSTRUCTION,
    QWEN3_RERANKER_PREFIX,
    QWEN3_RERANKER_SUFFIX,
)
from poolq.worker.engine.engine import AsyncEngine
from tests.rerank_checkpoints import build_classifier, build_cross_encoder, build_qwen3_reranker

LONG = " ".join(f"word{i % 37} of the manual" for i in range(200))  # over a 512-token window
PAIRS = [
    ("how do I reset the pump", "Hold the reset button for five seconds."),
    ("pump pressure", "The pressure gauge reads in bar; keep it between 1 and 2."),
    ("a", "b"),
    ("what is the warranty period for the controller board", LONG),
    ("billing address change", "To change your billing address, open Settings, then Account."),
    ("", "an empty query still scores"),
]
TOL = 1e-4


async def scores(folder, pairs=PAIRS, **cfg) -> np.ndarray:
    model = load_model(ModelConfig(str(folder), dtype="float32", device="cpu", **cfg))
    async with AsyncEngine(model, max_batch_tokens=512) as engine:  # several batches
        out = await engine.score(pairs)
    return np.array([float(r.tensor("score")) for r in out])


def cross_encoder_predict(folder, pairs=PAIRS) -> np.ndarray:
    from sentence_transformers import CrossEncoder

    ce = CrossEncoder(str(folder), device="cpu")
    return np.asarray(ce.predict(pairs, batch_size=4), dtype=np.float64)


@pytest.mark.parametrize("family", ["bert", "xlm-roberta", "distilbert", "modernbert"])
async def test_cross_encoder_scores_match_sentence_transformers(tmp_path, family):
    folder = build_cross_encoder(tmp_path / family, family, seed=11)
    got, want = await scores(folder), cross_encoder_predict(folder)
    assert np.abs(got - want).max() < TOL, (family, got, want)
    assert np.ptp(want) > 1e-3, "the pairs must score differently for the match to mean much"


async def test_broken_token_type_ids_break_the_match(tmp_path, monkeypatch):
    """BERT reads the text's segment as type 1: scored with every token as type 0 (the pair
    form told the model reads no types), the scores no longer match CrossEncoder's."""
    from poolq.worker.engine.checkpoints.kinds import classifier

    folder = build_cross_encoder(tmp_path / "bert", "bert", seed=11)
    want = cross_encoder_predict(folder)
    assert np.abs(await scores(folder) - want).max() < TOL
    monkeypatch.setattr(classifier, "reads_type_ids", lambda ck: False)
    broken = await scores(folder)
    assert np.abs(broken - want).max() > 100 * TOL, (broken, want)


async def test_a_cross_encoder_activation_named_by_the_checkpoint_is_applied(tmp_path):
    """CrossEncoder applies the config's ``sentence_transformers.activation_fn`` (here
    Identity: raw logits) instead of its sigmoid; so does the engine."""
    import json

    folder = build_cross_encoder(tmp_path / "bert", "bert", seed=5)
    config = json.loads((folder / "config.json").read_text())
    config["sentence_transformers"] = {"activation_fn": "torch.nn.modules.linear.Identity"}
    (folder / "config.json").write_text(json.dumps(config))
    got, want = await scores(folder), cross_encoder_predict(folder)
    assert np.abs(got - want).max() < TOL
    assert (want < 0).any() or (want > 1).any(), "raw logits, not probabilities"


def qwen3_card_scores(folder, pairs, max_length: int = 8192) -> np.ndarray:
    """The Qwen3-Reranker model card's ``process_inputs`` and ``compute_logits``, one pair at a
    time (no padding), on transformers' own model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    prefix = tok.encode(QWEN3_RERANKER_PREFIX, add_special_tokens=False)
    suffix = tok.encode(QWEN3_RERANKER_SUFFIX, add_special_tokens=False)
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    texts = [
        f"<Instruct>: {QWEN3_RERANKER_INSTRUCTION}\n<Query>: {q}\n<Document>: {d}" for q, d in pairs
    ]
    enc = tok(texts, padding=False, truncation="longest_first", return_attention_mask=False,
              max_length=max_length - len(prefix) - len(suffix))  # fmt: skip
    out = []
    with torch.inference_mode():
        for ids in enc["input_ids"]:
            logits = model(torch.tensor([prefix + ids + suffix])).logits[:, -1, :]
            pair = torch.stack([logits[:, no], logits[:, yes]], dim=1)
            out.append(float(torch.nn.functional.log_softmax(pair, dim=1)[:, 1].exp()))
    return np.array(out)


async def test_qwen3_reranker_matches_the_model_card_formula(tmp_path):
    """The window is the model's max length (its tokenizer's 512 here; the card picks 8192)."""
    folder = build_qwen3_reranker(tmp_path / "qwen3", seed=2)
    want = qwen3_card_scores(folder, PAIRS, max_length=512)
    got = await scores(folder)
    assert np.abs(got - want).max() < TOL, (got, want)
    assert np.ptp(want) > 1e-3


async def test_qwen3_reranker_cut_to_a_small_window_keeps_prompt_and_query(tmp_path):
    """With a 160-token window the long pair's document loses its tail; the prompt's closing
    tokens stay, so the score is still read after them (as the card's truncation does)."""
    folder = build_qwen3_reranker(tmp_path / "qwen3", seed=2)
    want = qwen3_card_scores(folder, PAIRS, max_length=160)
    got = await scores(folder, max_length=160)
    assert np.abs(got - want).max() < TOL, (got, want)


async def test_qwen3_reranker_named_by_the_profile_when_its_files_do_not_say(tmp_path):
    folder = build_qwen3_reranker(tmp_path / "qwen3", seed=2, card=False)
    assert "score" not in load_model(ModelConfig(str(folder))).description.supported_tasks
    want = qwen3_card_scores(folder, PAIRS[:3], max_length=512)
    got = await scores(folder, PAIRS[:3], classifier_from_token=("no", "yes"))
    assert np.abs(got - want).max() < TOL


def classifier_reference(folder, texts, multi_label: bool) -> np.ndarray:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    with torch.inference_mode():
        logits = model(**tok(texts, padding=True, truncation=True, return_tensors="pt")).logits
    return (torch.sigmoid(logits) if multi_label else torch.softmax(logits, -1)).numpy()


@pytest.mark.parametrize("multi_label", [False, True])
async def test_classifier_matches_transformers(tmp_path, multi_label):
    folder = build_classifier(tmp_path / "labels", multi_label=multi_label, seed=4)
    texts = [a + " " + b for a, b in PAIRS]
    model = load_model(ModelConfig(str(folder), dtype="float32", device="cpu"))
    async with AsyncEngine(model) as engine:
        got = np.stack(
            [r.tensor("classify").numpy() for r in await engine.encode(texts, ["classify"])]
        )
    want = classifier_reference(folder, texts, multi_label)
    assert np.abs(got - want).max() < TOL
    if not multi_label:
        assert np.allclose(got.sum(1), 1, atol=1e-5)


async def test_text_tasks_refuse_score_and_pairs_are_checked(tmp_path):
    folder = build_cross_encoder(tmp_path / "bert", "bert", seed=1)
    async with AsyncEngine(load_model(ModelConfig(str(folder)))) as engine:
        with pytest.raises(ValueError, match=r"task .score. reads \(query, text\) pairs"):
            await engine.encode(["a"], ["score"])
        with pytest.raises(ValueError, match=r"request .bad.: expected a \(query, text\) pair"):
            await engine.score([("q", 3)], request_ids=["bad"])  # type: ignore[list-item]
        out = await engine.score([("q", "t"), ("q",)], return_exceptions=True)  # type: ignore[list-item]
        assert isinstance(out[1], ValueError) and float(out[0].tensor("score")) > 0
        with pytest.raises(ValueError, match="pair is longer than the model's max length"):
            await engine.score([("q", LONG)], truncate=False)
