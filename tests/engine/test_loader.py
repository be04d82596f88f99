"""Checkpoint layouts load into the right poolers, checked against HF / sentence-transformers."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from torch.testing import assert_close

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from tests.describe import describe_model
from tests.models import minilm_path

TEXTS = [
    "a short one",
    "the quick brown fox jumps over the lazy dog",
    "pooling models in a continuous batching engine",
]


def tiny_folder(tmp_path, model, name):
    folder = tmp_path / name
    model.save_pretrained(folder)
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm_path() / f, folder / f)
    return folder


def hf_inputs(texts):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_path()))(
        texts, padding=True, return_tensors="pt"
    )


async def run(folder, tasks, **cfg):
    async with AsyncEngine(load_model(ModelConfig(str(folder), **cfg))) as engine:
        return await engine.encode(TEXTS, tasks)


def tiny_config(cls, **kw):
    base = dict(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    return cls(**{**base, **kw})


def test_describe_without_running(minilm):
    d = describe_model(minilm)
    assert (d.kind, d.pooling, d.normalize, d.max_length) == ("encoder", "MEAN", True, 256)
    assert dict(d.output_dims) == {"embed": 384, "token_embed": 384}


@pytest.mark.parametrize("num_labels", [1, 3])
async def test_bert_sequence_classification(tmp_path, num_labels):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    hf = BertForSequenceClassification(tiny_config(BertConfig, num_labels=num_labels)).eval()
    folder = tiny_folder(tmp_path, hf, "cls")
    want_tasks = ("score", "classify") if num_labels == 1 else ("classify",)  # one label: pairs
    assert describe_model(str(folder)).supported_tasks == want_tasks
    out = await run(folder, ["classify"])
    with torch.inference_mode():
        logits = hf(**hf_inputs(TEXTS)).logits
    want = torch.sigmoid(logits) if num_labels == 1 else torch.softmax(logits, -1)
    assert_close(torch.stack([r.tensor("classify") for r in out]), want, atol=1e-5, rtol=1e-4)


async def test_xlmr_sequence_classification(tmp_path):
    from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification

    torch.manual_seed(1)
    hf = XLMRobertaForSequenceClassification(
        tiny_config(XLMRobertaConfig, num_labels=2, pad_token_id=1)
    ).eval()
    folder = tiny_folder(tmp_path, hf, "xlmr")
    out = await run(folder, ["classify"])
    with torch.inference_mode():
        logits = hf(**{k: v for k, v in hf_inputs(TEXTS).items() if k != "token_type_ids"}).logits
    assert_close(
        torch.stack([r.tensor("classify") for r in out]),
        torch.softmax(logits, -1),
        atol=1e-5,
        rtol=1e-4,
    )


async def test_roberta_masked_lm_serves_splade(tmp_path):
    from transformers import RobertaConfig, RobertaForMaskedLM

    torch.manual_seed(2)
    hf = RobertaForMaskedLM(tiny_config(RobertaConfig, pad_token_id=1)).eval()
    folder = tiny_folder(tmp_path, hf, "mlm")
    out = await run(folder, ["sparse"])
    enc = {k: v for k, v in hf_inputs(TEXTS).items() if k != "token_type_ids"}
    with torch.inference_mode():
        logits = hf(**enc).logits
    w = torch.log1p(torch.relu(logits)) * enc["attention_mask"].unsqueeze(-1)
    want = w.amax(1)
    for r, ref in zip(out, want, strict=True):
        assert_close(r.sparse().to_dense(30522), ref, atol=1e-5, rtol=1e-4)


async def test_sentence_transformers_cls_pooling_and_dense_projector(tmp_path, minilm):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense, Pooling, Transformer

    torch.manual_seed(3)
    st = SentenceTransformer(
        modules=[
            Transformer(minilm, max_seq_length=128),
            Pooling(384, "cls"),
            Dense(384, 64, activation_function=torch.nn.Tanh()),
        ],
        device="cpu",
    )
    folder = tmp_path / "st-dense"
    st.save(str(folder))
    d = describe_model(str(folder))
    assert (d.pooling, d.normalize, d.max_length, d.output_dim("embed")) == ("CLS", False, 128, 64)
    out = await run(folder, ["embed"])
    want = st.encode(TEXTS, convert_to_tensor=True)
    assert_close(torch.stack([r.tensor("embed") for r in out]), want, atol=1e-5, rtol=1e-4)
    # explicit config beats the metadata
    out = await run(folder, ["embed"], pooling="MEAN", normalize=True)
    assert abs(float(out[0].tensor("embed").norm()) - 1) < 1e-5


def test_offline_hub_id_error_names_id_and_variable(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match=r"'acme/not-cached'.*HF_HUB_OFFLINE"):
        describe_model("acme/not-cached")


def test_remote_code_models_are_not_run(tmp_path, minilm):
    """A whole checkpoint (weights, tokenizer) whose config asks for its own modeling code: the
    load is refused by transformers (no trust_remote_code) and the code never runs."""
    folder = tmp_path / "custom"
    folder.mkdir()
    for f in Path(minilm).iterdir():
        if f.name.startswith(("tokenizer", "vocab", "special_tokens")):
            shutil.copy(f, folder / f.name)
    (folder / "config.json").write_text(
        json.dumps(
            {
                "model_type": "my-custom",
                "auto_map": {"AutoConfig": "modeling.MyConfig", "AutoModel": "modeling.MyModel"},
                "architectures": ["MyModel"],
                "hidden_size": 8,
            }
        )
    )
    ran = tmp_path / "remote-code-ran"
    (folder / "modeling.py").write_text(f"open({str(ran)!r}, 'w').write('it ran')\n")
    save_file({"w": torch.zeros(2)}, str(folder / "model.safetensors"))
    with pytest.raises(ValueError, match="trust_remote_code"):
        load_model(str(folder))
    assert not ran.exists()
