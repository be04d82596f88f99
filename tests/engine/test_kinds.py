"""The checkpoint-kind registry (``worker/engine/checkpoints/kinds/``): recognition gives what the if/elif
chain it replaced gave on the same inputs (every combination of the files, ``architectures``,
weight names, ``model_type`` and sentence-transformers metadata that chain looked at), in the
precedence order; each kind lists its tasks; SPLADE's special tokens are the tokenizer's own; and
a kind registered at run time is recognised, described and loaded with no change to the loader
or the pooler builder."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from poolq.worker.engine.checkpoints.checkpoint import DenseModule, SentenceTransformersInfo
from poolq.worker.engine.checkpoints.kinds import (
    KINDS,
    Checkpoint,
    CheckpointKind,
    PoolerInputs,
    recognize,
)
from poolq.worker.engine.checkpoints.kinds.decoder import is_causal
from poolq.worker.engine.checkpoints.kinds.registry import KindRegistry
from poolq.worker.engine.checkpoints.kinds.special_tokens import boundary_token_ids
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.execution.tokenizer import TextTokenizer
from poolq.worker.pooling import DispatchPooler, EmbeddingHead, SequencePooler, sequence_method
from tests.describe import describe_model
from tests.models import minilm_path, splade_path


def _st(*module_types: str, dense_out: int | None = None) -> SentenceTransformersInfo:
    dense = (DenseModule(8, dense_out, False, "Identity", Path("1_Dense")),) if dense_out else ()
    return SentenceTransformersInfo(module_types, None, dense, False, None)


def recognize_kind(config, path, shapes, st) -> str:
    """The registry's answer for a checkpoint's pieces (its files, config, shapes, ST info)."""
    return recognize(Checkpoint(str(path), path, dict(config), st, dict(shapes))).name


def recognize_before(config, path, shapes, st) -> str:
    """The if/elif chain that picked a kind before the registry (the oracle)."""
    archs = [str(a) for a in config.get("architectures") or []]
    arch = archs[0] if archs else ""
    if (path / "colbert_linear.pt").is_file() or (path / "sparse_linear.pt").is_file():
        return "bge_m3"
    if arch == "HF_ColBERT" or "linear.weight" in shapes:
        return "colbert"
    if st is not None and any("pylate" in t.lower() for t in st.module_types):
        return "colbert"
    if arch.endswith("ForMaskedLM"):
        return "masked_lm"
    if arch.endswith("ForSequenceClassification"):
        return "classifier"
    if is_causal(config) and config.get("classifier_from_token"):
        return "lm_reranker"
    if is_causal(config):
        return "decoder"
    return "encoder"


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict[str, Path]:
    """Folders that differ only in BGE-M3's head files."""
    root = tmp_path_factory.mktemp("layouts")
    out = {}
    for name in ("plain", "colbert_linear.pt", "sparse_linear.pt"):
        (root / name).mkdir()
        if name != "plain":
            (root / name / name).write_bytes(b"")
        out[name] = root / name
    return out


ARCHS = [None, "XModel", "HF_ColBERT", "XForMaskedLM", "XForSequenceClassification", "XForCausalLM"]
MODEL_TYPES = ["bert", "qwen3", "llama", "gpt2", "my-custom"]
SHAPES = [{}, {"linear.weight": (128, 384)}]
STS = [None, _st("sentence_transformers.models.Transformer"), _st("pylate.models.Dense.Dense")]


def test_recognition_matches_the_chain_it_replaced(layouts):
    grid = itertools.product(
        layouts.values(), ARCHS, MODEL_TYPES, [False, True], SHAPES, STS, [None, ["no", "yes"]]
    )
    seen = set()
    for path, arch, model_type, is_decoder, shapes, st, tokens in grid:
        config = {"model_type": model_type, "is_decoder": is_decoder}
        if tokens:
            config["classifier_from_token"] = tokens
        if arch:
            config["architectures"] = [arch]
        want = recognize_before(config, path, shapes, st)
        assert recognize_kind(config, path, shapes, st) == want, (path.name, config, shapes, st)
        seen.add(want)
    assert seen == set(KINDS.names)


@pytest.mark.parametrize(
    ("files", "arch", "model_type", "shapes", "st", "want"),
    [
        ((), "BertModel", "bert", {}, None, "encoder"),
        ((), None, "my-custom", {}, None, "encoder"),  # no family: the padded fallback's encoder
        ((), "Qwen3Model", "qwen3", {}, None, "decoder"),
        ((), None, "gpt2", {}, None, "decoder"),  # a known fallback decoder
        ((), "HF_ColBERT", "bert", {}, None, "colbert"),
        ((), "BertModel", "bert", {"linear.weight": (128, 384)}, None, "colbert"),
        ((), "BertModel", "modernbert", {}, _st("pylate.models.Dense.Dense"), "colbert"),
        ((), "BertForMaskedLM", "bert", {}, None, "masked_lm"),
        ((), "XLMRobertaForSequenceClassification", "xlm-roberta", {}, None, "classifier"),
        (("colbert_linear.pt",), "XLMRobertaModel", "xlm-roberta", {}, None, "bge_m3"),
        (("sparse_linear.pt",), "XLMRobertaModel", "xlm-roberta", {}, None, "bge_m3"),
        # precedence: BGE-M3's files beat every architecture; ColBERT beats the heads; the
        # heads beat a causal family
        (("sparse_linear.pt",), "XLMRobertaForMaskedLM", "xlm-roberta", {}, None, "bge_m3"),
        (("colbert_linear.pt",), "HF_ColBERT", "bert", {"linear.weight": (8, 8)}, None, "bge_m3"),
        ((), "BertForMaskedLM", "bert", {"linear.weight": (8, 8)}, None, "colbert"),
        ((), "BertForSequenceClassification", "bert", {}, _st("pylate.Dense"), "colbert"),
        ((), "LlamaForMaskedLM", "llama", {}, None, "masked_lm"),
        ((), "Qwen3ForSequenceClassification", "qwen3", {}, None, "classifier"),
        # an LLM reranker: a causal LM whose model card says text-ranking (Qwen3-Reranker)
        (("README.md",), "Qwen3ForCausalLM", "qwen3", {}, None, "lm_reranker"),
        (("README.md",), "BertModel", "bert", {}, None, "encoder"),  # not causal: the tag alone
    ],
)
def test_each_kind_and_precedence(tmp_path, files, arch, model_type, shapes, st, want):
    for f in files:
        card = "---\nlicense: apache-2.0\npipeline_tag: text-ranking\n---\n# a model\n"
        (tmp_path / f).write_text(card if f == "README.md" else "")
    config = {"model_type": model_type, "architectures": [arch] if arch else []}
    ck = Checkpoint("m", tmp_path, config, st, shapes)
    assert recognize(ck).name == want
    assert recognize_kind(config, tmp_path, shapes, st) == want


def test_precedence_order_and_catch_all():
    assert KINDS.names == (
        "bge_m3", "colbert", "masked_lm", "classifier", "lm_reranker", "decoder", "encoder"
    )  # fmt: skip
    assert KINDS.kinds[-1].recognize(Checkpoint("m", Path("/nowhere"), {}, None, {}))


def _ck(tmp_path, config, shapes=None, st=None) -> Checkpoint:
    return Checkpoint(
        "m", tmp_path, {"model_type": "bert", "vocab_size": 100, **config}, st, shapes or {}
    )


def test_tasks_and_sizes_per_kind(tmp_path):
    named = {k.name: k for k in KINDS.kinds}
    hidden = {"hidden_size": 32}
    assert named["encoder"].tasks(_ck(tmp_path, hidden)) == {"embed": 32, "token_embed": 32}
    st = _st("x", dense_out=16)
    assert named["decoder"].tasks(_ck(tmp_path, {"d_model": 32}, st=st)) == {
        "embed": 16,
        "token_embed": 32,
    }
    assert named["colbert"].tasks(_ck(tmp_path, hidden, {"linear.weight": (8, 32)})) == {
        "token_embed": 8
    }
    assert named["colbert"].tasks(_ck(tmp_path, hidden, st=st)) == {"token_embed": 16}
    assert named["masked_lm"].tasks(_ck(tmp_path, hidden)) == {"sparse": 100}
    out_proj = {"classifier.out_proj.weight": (3, 32)}
    assert named["classifier"].tasks(_ck(tmp_path, {"num_labels": 5}, out_proj)) == {"classify": 3}
    one_label = _ck(tmp_path, {"id2label": {"0": "a"}})  # a cross-encoder: it also scores pairs
    assert named["classifier"].tasks(one_label) == {"score": 1, "classify": 1}
    assert named["classifier"].tasks(_ck(tmp_path, {})) == {"classify": 2}
    bge = named["bge_m3"]
    torch.save({"weight": torch.zeros(1, 32)}, tmp_path / "sparse_linear.pt")
    assert list(bge.tasks(_ck(tmp_path, hidden)).items()) == [("embed", 32), ("sparse", 100)]
    torch.save({"weight": torch.zeros(24, 32)}, tmp_path / "colbert_linear.pt")
    want = [("embed", 32), ("token_embed", 24), ("sparse", 100)]
    assert list(bge.tasks(_ck(tmp_path, hidden)).items()) == want


def _hard_coded(tok: TextTokenizer) -> list[int]:
    """What the pooler builder dropped before: these four strings, where the vocabulary has them."""
    ids = (tok.token_id(t) for t in ("[CLS]", "[SEP]", "<s>", "</s>"))
    return sorted(t for t in ids if t is not None)


def _wordlevel_tokenizer(folder: Path, llama: bool) -> Path:
    """A tiny WordLevel tokenizer with ``<s>`` = 0 and ``</s>`` = 2. ``llama``: its template adds
    ``<s>`` only and its files declare BOS and EOS (as transformers saves them: a name, an
    AddedToken object); else RoBERTa's ``<s> ... </s>`` template and nothing declared."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(["<s>", "<pad>", "</s>", "<unk>", "hello", "world"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>"])
    tok.post_processor = (
        processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
        if llama
        else processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    if llama:
        eos = {"content": "</s>", "special": True}
        (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>"}))
        (folder / "special_tokens_map.json").write_text(json.dumps({"eos_token": eos}))
    return folder


def _tokenizer_only(src: Path, folder: Path) -> Path:
    folder.mkdir()
    shutil.copy(src / "tokenizer.json", folder / "tokenizer.json")
    return folder


@pytest.mark.parametrize(
    "which", ["minilm", "splade", "splade_tokenizer_json_only", "llama_like", "roberta_like"]
)
def test_splade_special_tokens_are_the_tokenizers_own(tmp_path, which):
    folder = {
        "minilm": lambda: minilm_path(),
        "splade": lambda: splade_path(),
        "splade_tokenizer_json_only": lambda: _tokenizer_only(splade_path(), tmp_path / "t"),
        "llama_like": lambda: _wordlevel_tokenizer(tmp_path / "l", llama=True),
        "roberta_like": lambda: _wordlevel_tokenizer(tmp_path / "r", llama=False),
    }[which]()
    tok = TextTokenizer.from_folder(folder, 128)
    ids = boundary_token_ids(folder, tok)
    assert ids == _hard_coded(tok)
    assert ids == ([0, 2] if which.endswith("_like") else [101, 102])


def test_splade_drops_the_tokenizers_cls_and_sep(splade):
    model = load_model(ModelConfig(splade, splade_remove_special=True))
    assert model.pooler.poolers_by_task["sparse"].remove_token_ids == (101, 102)
    assert load_model(ModelConfig(splade)).pooler.poolers_by_task["sparse"].remove_token_ids == ()


MARKER = "toy_head.json"


def _toy_poolers(p: PoolerInputs) -> DispatchPooler:
    head = EmbeddingHead(p.desc.output_dim("embed"), normalize=False)
    return DispatchPooler({"embed": SequencePooler(sequence_method("CLS"), head)})


TOY = CheckpointKind(
    name="toy",
    recognize=lambda ck: ck.has_file(MARKER),
    tasks=lambda ck: {"embed": ck.hidden_size},
    build_poolers=_toy_poolers,
    pooling=lambda ck, cfg: "CLS",
)


@pytest.fixture
def toy_kind(monkeypatch):
    """TOY in the registry, just ahead of the catch-all ``encoder``, for one test (a real kind
    is one line in ``kinds/__init__.py``)."""
    at = KINDS.names.index("encoder")
    kinds = KindRegistry([*KINDS.kinds[:at], TOY, *KINDS.kinds[at:]]).kinds
    monkeypatch.setattr(KINDS, "_kinds", kinds)
    return TOY


@pytest.fixture
def toy_folder(tmp_path) -> Path:
    from transformers import BertConfig, BertModel

    torch.manual_seed(7)
    config = BertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config, add_pooling_layer=False).eval().save_pretrained(tmp_path / "toy")
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm_path() / f, tmp_path / "toy" / f)
    (tmp_path / "toy" / MARKER).write_text("{}")
    return tmp_path / "toy"


async def test_a_registered_kind_is_recognised_described_and_loaded(toy_kind, toy_folder):
    """No change to the loader or the pooler builder: one entry, registered."""
    assert KINDS.names[-2:] == ("toy", "encoder")
    d = describe_model(str(toy_folder))
    assert (d.kind, d.supported_tasks, d.output_dims, d.pooling) == (
        "toy",
        ("embed",),
        (("embed", 32),),
        "CLS",
    )
    assert not d.native_encoder  # no family lists "toy": the padded transformers fallback runs it
    texts = ["hello world", "a longer text about pooling models"]
    async with AsyncEngine(load_model(ModelConfig(str(toy_folder)))) as engine:
        out = await engine.encode(texts, ["embed"])
    from transformers import AutoTokenizer, BertModel

    hf = BertModel.from_pretrained(str(toy_folder)).eval()
    with torch.inference_mode():
        enc = AutoTokenizer.from_pretrained(str(toy_folder))(
            texts, padding=True, return_tensors="pt"
        )
        want = hf(**enc).last_hidden_state[:, 0]  # the toy's output: the CLS row, not normalized
    assert_close(torch.stack([r.tensor("embed") for r in out]), want, atol=1e-5, rtol=1e-4)


def test_without_registration_the_same_folder_is_an_encoder(toy_folder):
    assert describe_model(str(toy_folder)).kind == "encoder"
    assert "toy" not in KINDS.names


def test_registry_refuses_duplicates_and_unknown_names():
    with pytest.raises(ValueError, match="'toy' is already registered"):
        KindRegistry([TOY, TOY])
    with pytest.raises(ValueError, match=r"no checkpoint kind 'nope'; kinds: \['bge_m3'"):
        KINDS.by_name("nope")
