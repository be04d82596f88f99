"""ModernBERT on the packed engine vs transformers' ``ModernBertModel`` (random weights, the real
on-disk layout, fp32): texts longer than the local window, CLS and mean pooling."""

from __future__ import annotations

import shutil

import pytest
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.models.packed_modernbert import PackedModernBert
from tests.describe import describe_model
from tests.models import minilm_path
from tests.texts import varied_texts

TEXTS = [*varied_texts(40)[:20], " ".join(f"word{i} and more" for i in range(150))]


@pytest.fixture(scope="module")
def modernbert(tmp_path_factory):
    from transformers import ModernBertConfig, ModernBertModel

    config = ModernBertConfig(
        vocab_size=30522,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=4,
        num_attention_heads=4,
        global_attn_every_n_layers=2,
        local_attention=32,  # a 16-token half window: most texts here are longer
        max_position_embeddings=1024,
        pad_token_id=0,
        cls_token_id=101,
        sep_token_id=102,
        bos_token_id=101,
        eos_token_id=102,
        global_rope_theta=160000.0,
        local_rope_theta=10000.0,
    )
    torch.manual_seed(11)
    model = ModernBertModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))
            if "Wqkv" in name:  # peaked attention: the local window changes the outputs a lot
                p.mul_(12)
    folder = tmp_path_factory.mktemp("modernbert") / "m"
    model.save_pretrained(folder)
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm_path() / f, folder / f)
    return folder


def reference(folder, ids_list, pooling):
    from transformers import AutoModel

    hf = AutoModel.from_pretrained(str(folder)).eval()
    rows = []
    with torch.inference_mode():
        for ids in ids_list:
            h = hf(input_ids=torch.tensor([ids])).last_hidden_state[0]
            rows.append(h[0] if pooling == "CLS" else h.mean(0))
    return torch.nn.functional.normalize(torch.stack(rows), dim=-1)


def test_modernbert_is_native(modernbert):
    d = describe_model(str(modernbert))
    assert (d.kind, d.native_encoder, d.pooling) == ("encoder", True, "CLS")
    assert isinstance(load_model(ModelConfig(str(modernbert))).encoder, PackedModernBert)


@pytest.mark.parametrize("pooling", ["CLS", "MEAN"])
async def test_modernbert_matches_transformers(modernbert, pooling):
    model = load_model(ModelConfig(str(modernbert), pooling=pooling))
    ids = [t.ids for t in model.tokenizer.encode_batch(TEXTS)]
    assert max(len(i) for i in ids) > 300 and sum(len(i) > 40 for i in ids) >= 5
    want = reference(modernbert, ids, pooling)
    async with AsyncEngine(model, max_batch_tokens=1024) as engine:
        out = await engine.encode(TEXTS, ["embed"])
    got = torch.stack([r.tensor("embed") for r in out])
    cos = torch.nn.functional.cosine_similarity(got, want, dim=-1)
    assert cos.min() >= 0.99999, f"min cosine {cos.min():.7f} at text {int(cos.argmin())}"


async def test_the_local_window_matters(modernbert, tmp_path):
    """The same weights with every layer global give clearly different vectors on these texts:
    the comparison above would catch a wrong window."""
    import json

    config = json.loads((modernbert / "config.json").read_text())
    config["layer_types"] = ["full_attention"] * len(config["layer_types"])
    folder = tmp_path / "global"
    shutil.copytree(modernbert, folder)
    (folder / "config.json").write_text(json.dumps(config))
    outs = []
    for f in (modernbert, folder):
        async with AsyncEngine(load_model(ModelConfig(str(f), pooling="MEAN"))) as engine:
            outs.append(
                torch.stack([r.tensor("embed") for r in await engine.encode(TEXTS, ["embed"])])
            )
    cos = torch.nn.functional.cosine_similarity(outs[0], outs[1], dim=-1)
    assert cos.min() < 0.999
