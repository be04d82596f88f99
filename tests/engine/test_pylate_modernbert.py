"""PyLate ColBERT on a ModernBERT backbone (GTE-ModernColBERT's layout) vs PyLate itself: PyLate
builds and saves the model from a random ``ModernBertModel`` (its ``[Q] `` / ``[D] `` prefix
tokens, ``1_Dense`` projection and config), encodes queries and documents with
``pylate.models.ColBERT.encode``; poolq loads the saved folder as a user would. Texts run past
the local attention window; queries are expanded with mask tokens that are not attended to."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.models.packed_modernbert import PackedModernBert
from tests.models import minilm_path
from tests.texts import varied_texts

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PYLATE_REF = ROOT / "build" / "pylate-ref"  # made by `make install` (Makefile: PYLATE_REF)
TEXTS = [
    "Hello, world!",
    "what is late interaction retrieval?",
    *varied_texts(30)[:10],
    " ".join(f"token{i}, and more text" for i in range(60)),
]


@pytest.fixture(scope="module")
def pylate_modernbert(tmp_path_factory) -> tuple[Path, dict[str, list[torch.Tensor]]]:
    from transformers import ModernBertConfig, ModernBertModel

    if not (PYLATE_REF / "pylate").is_dir():
        pytest.fail(f"{PYLATE_REF} is missing: run `make install`")
    config = ModernBertConfig(
        vocab_size=30522,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=4,
        num_attention_heads=4,
        global_attn_every_n_layers=2,
        local_attention=64,  # half window 32 >= query_length: documents run past it
        max_position_embeddings=1024,
        pad_token_id=0,
        cls_token_id=101,
        sep_token_id=102,
        bos_token_id=101,
        eos_token_id=102,
    )
    torch.manual_seed(17)
    model = ModernBertModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))
            if "Wqkv" in name:  # peaked attention: the window and the key mask matter
                p.mul_(8)
    tmp = tmp_path_factory.mktemp("pylate_modernbert")
    base, out = tmp / "base", tmp / "colbert"
    model.save_pretrained(base)
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm_path() / f, base / f)
    (tmp / "texts.json").write_text(json.dumps(TEXTS))
    env = {**os.environ, "PYTHONPATH": f"{PYLATE_REF}{os.pathsep}{ROOT}"}
    script = ROOT / "tests" / "references" / "pylate_colbert.py"
    run = subprocess.run(
        [sys.executable, str(script), str(base), str(out), str(tmp / "texts.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return out, torch.load(out / "reference.pt")


def test_pylate_modernbert_is_native_colbert(pylate_modernbert):
    folder, _ = pylate_modernbert
    model = load_model(ModelConfig(str(folder)))
    d = model.description
    assert (d.kind, d.native_encoder) == ("colbert", True)
    assert isinstance(model.encoder, PackedModernBert)
    assert d.input_forms is not None and d.input_forms.source == "pylate"
    assert (d.input_forms.query.max_length, d.input_forms.document.max_length) == (32, 300)


@pytest.mark.parametrize("form", ["query", "document"])
async def test_pylate_modernbert_matches_pylate_encode(pylate_modernbert, form):
    folder, ref = pylate_modernbert
    model = load_model(ModelConfig(str(folder)))
    assert max(len(t.ids) for t in model.tokenizer.encode_batch(TEXTS)) > 64 * 2
    async with AsyncEngine(model, max_batch_tokens=1024) as engine:
        out = await engine.encode(TEXTS, ["token_embed"], input_form=form)
    worst = 1.0
    for i, (r, want) in enumerate(zip(out, ref[form], strict=True)):
        got = r["token_embed"]
        assert got.shape == want.shape, (
            f"{form} {i} ({TEXTS[i][:30]!r}): {got.shape} vs {want.shape}"
        )
        cos = torch.nn.functional.cosine_similarity(got, want, dim=-1)
        assert cos.min() >= 0.9999, f"{form} {i}: min per-token cosine {cos.min():.6f}"
        worst = min(worst, float(cos.min()))
    print(f"PyLate ModernBERT {form}: min per-token cosine {worst:.7f}")
