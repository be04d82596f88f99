"""ColBERT query and document forms against hand-written references of colbert-ir and PyLate.

The references follow the libraries' own steps with HF ``transformers`` (no poolq code):
colbert-ir ``QueryTokenizer.tensorize`` / ``DocTokenizer.tensorize`` (``". " + text``, the
``"."`` overwritten by the marker, ``[MASK]`` padding with attention mask 0, punctuation rows
dropped from documents) and PyLate ``ColBERT.preprocess`` / ``encode`` (marker inserted after
``[CLS]``, padding with the mask token, skiplist rows dropped from documents).
"""

from __future__ import annotations

import asyncio
import string
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from transformers import AutoTokenizer, BertConfig, BertModel

from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.batching.requests import EncodeRequest
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine, InputTooLongError
from poolq.worker.engine.models.encoder_spec import EncoderSpec
from poolq.worker.engine.models.packed_encoder import PackedEncoder
from poolq.worker.pooling import PoolingParams
from tests.describe import describe_model
from tests.models import build_colbert_with_metadata, build_pylate

ATOL = 2e-5
LONG_QUERY = "what are the main differences between late interaction retrieval models " * 3
TEXTS = [
    "",
    " ",
    "a",
    "Hello, world!",
    "what is colbert?",
    LONG_QUERY,  # far over query_maxlen
    "!!! ... ,,, ;;; --- (a) [b] {c} <d> 'e' \"f\" #g $h %i &j *k +l /m :n =o ?p @q \\r ^s _t `u |v ~w",
    "e-mail: someone@example.com; cost: $3.50 (approx.)",
    "naïve café résumé — déjà vu",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "emoji 🚀🔥 and symbols ∑∫√ ≠ ≤",
    "tabs\tand\nnewlines\n\nparagraphs",
    "UPPER lower MiXeD 12345 3.14159 0xDEADBEEF",
    "a literal [MASK] token and [unused0] marker in the text",
    "word " * 29,  # the document form is exactly 32 tokens, like every query
    "The quick brown fox jumps over the lazy dog. " * 30,  # far over doc_maxlen
    "Late interaction: every query token finds its best matching document token.",
    "short",
    "Qdrant stores dense, sparse and multi-vector embeddings.",
]


# References ------------------------------------------------------------------------------------
class ColbertIrReference:
    """colbert-ir's tokenizers and ``ColBERT.query`` / ``ColBERT.doc`` on HF ``BertModel``."""

    def __init__(self, folder: str, query_maxlen=32, doc_maxlen=220, attend_to_mask_tokens=False):
        self.tok = AutoTokenizer.from_pretrained(folder)
        state = load_file(f"{folder}/model.safetensors")
        self.bert = BertModel(BertConfig.from_pretrained(folder), add_pooling_layer=False).eval()
        bert_state = {k[len("bert.") :]: v for k, v in state.items() if k.startswith("bert.")}
        missing, _ = self.bert.load_state_dict(bert_state, strict=False)
        assert not [m for m in missing if "position_ids" not in m], missing
        self.linear = state["linear.weight"]  # [128, 384]
        self.query_maxlen, self.doc_maxlen = query_maxlen, doc_maxlen
        self.attend = attend_to_mask_tokens
        self.q_marker = self.tok.convert_tokens_to_ids("[unused0]")
        self.d_marker = self.tok.convert_tokens_to_ids("[unused1]")
        self.skiplist = {
            self.tok.encode(symbol, add_special_tokens=False)[0] for symbol in string.punctuation
        }

    def _forward(self, ids, mask):
        with torch.inference_mode():
            h = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state  # [1, L, H]
        return F.normalize(h @ self.linear.T, p=2, dim=2)[0]  # [L, 128]

    def query(self, text: str) -> torch.Tensor:
        obj = self.tok(
            [". " + text],
            padding="max_length",
            truncation=True,
            max_length=self.query_maxlen,
            return_tensors="pt",
        )
        ids, mask = obj["input_ids"], obj["attention_mask"]
        ids[:, 1] = self.q_marker
        ids[ids == self.tok.pad_token_id] = self.tok.mask_token_id
        if self.attend:
            mask[ids == self.tok.mask_token_id] = 1
        return self._forward(ids, mask)  # every row kept

    def document(self, text: str) -> torch.Tensor:
        obj = self.tok(
            [". " + text],
            padding="longest",
            truncation="longest_first",
            max_length=self.doc_maxlen,
            return_tensors="pt",
        )
        ids, mask = obj["input_ids"], obj["attention_mask"]
        ids[:, 1] = self.d_marker
        d = self._forward(ids, mask)
        keep = [(x not in self.skiplist) and (x != self.tok.pad_token_id) for x in ids[0].tolist()]
        return d[torch.tensor(keep)]


class PylateReference:
    """PyLate's ``preprocess`` and ``encode`` on HF ``BertModel`` + the Dense weight."""

    def __init__(self, folder: str, cfg: dict):
        self.tok = AutoTokenizer.from_pretrained(folder)
        self.tok.pad_token = self.tok.mask_token  # PyLate pads queries with the mask token
        self.bert = BertModel.from_pretrained(folder, add_pooling_layer=False).eval()
        self.linear = load_file(f"{folder}/1_Dense/model.safetensors")["linear.weight"]
        self.cfg = cfg
        self.skiplist = [
            self.tok.convert_tokens_to_ids(w)
            for w in cfg.get("skiplist_words", list(string.punctuation))
        ]

    def _encode(self, text: str, is_query: bool) -> torch.Tensor:
        c = self.cfg
        max_length = c["query_length"] if is_query else c["document_length"]
        prefix = c["query_prefix"] if is_query else c["document_prefix"]
        expand = is_query and c.get("do_query_expansion", True)
        obj = self.tok(
            [text],
            padding="max_length" if expand else False,
            truncation=True,
            max_length=max_length - 1,
            return_tensors="pt",
        )
        ids, mask = obj["input_ids"], obj["attention_mask"]
        pid = self.tok.convert_tokens_to_ids(prefix)
        ids = torch.cat([ids[:, :1], torch.full((1, 1), pid), ids[:, 1:]], dim=1)
        mask = torch.cat([mask[:, :1], torch.ones(1, 1, dtype=mask.dtype), mask[:, 1:]], dim=1)
        if expand and c.get("attend_to_expansion_tokens", False):
            mask.fill_(1)
        with torch.inference_mode():
            h = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state[0]  # [L, H]
        e = h @ self.linear.T  # [L, 128]
        if is_query:
            keep = torch.ones(ids.shape[1], dtype=torch.bool) if expand else mask[0].bool()
        else:
            keep = ~torch.isin(ids[0], torch.tensor(self.skiplist)) & mask[0].bool()
        return F.normalize(e[keep], p=2, dim=1)

    def query(self, text: str) -> torch.Tensor:
        return self._encode(text, True)

    def document(self, text: str) -> torch.Tensor:
        return self._encode(text, False)


# Helpers ---------------------------------------------------------------------------------------
async def encode_forms(model, texts, **engine_kw):
    async with AsyncEngine(model, **engine_kw) as engine:
        q = await engine.encode(texts, ["token_embed"], input_form="query")
        d = await engine.encode(texts, ["token_embed"], input_form="document")
    return [r["token_embed"] for r in q], [r["token_embed"] for r in d]


def max_abs_diffs(got: list[torch.Tensor], ref, form: str) -> list[float]:
    diffs = []
    for i, (g, text) in enumerate(zip(got, TEXTS, strict=True)):
        want = getattr(ref, form)(text)
        assert g.shape == want.shape, f"{form} {i} ({text[:30]!r}): {g.shape} vs {want.shape}"
        diffs.append(float((g - want).abs().max()))
    assert max(diffs) < ATOL, (
        f"{form}: max abs diff {max(diffs):.2e} at text {diffs.index(max(diffs))}"
    )
    return diffs


@pytest.fixture(scope="module")
def colbert_model(colbert):
    return load_model(ModelConfig(colbert))


@pytest.fixture(scope="module")
def colbert_outputs(colbert_model):
    return asyncio.run(encode_forms(colbert_model, TEXTS))


# colbert-ir ------------------------------------------------------------------------------------
def test_colbert_ir_forms_are_read_with_defaults(colbert):
    desc = describe_model(colbert)
    assert desc.input_forms is not None
    forms = desc.input_forms
    assert forms.source == "colbert-ir"
    assert (forms.query.max_length, forms.document.max_length) == (32, 220)
    assert forms.query.marker_id == 1 and forms.document.marker_id == 2  # [unused0], [unused1]
    assert forms.query.expansion_id == 103 and not forms.query.attend_to_expansion  # [MASK]
    assert len(forms.document.skip_token_ids) == len(string.punctuation)
    assert not forms.query.skip_token_ids and forms.document.expansion_id is None


async def test_colbert_ir_query_and_document_match_reference(colbert, colbert_outputs):
    ref = ColbertIrReference(colbert)
    queries, documents = colbert_outputs
    q = max_abs_diffs(queries, ref, "query")
    d = max_abs_diffs(documents, ref, "document")
    print(f"colbert-ir max abs diff: query {max(q):.2e}, document {max(d):.2e}")
    assert all(t.shape == (32, 128) for t in queries)
    # punctuation rows are gone from documents, kept in queries
    assert documents[3].shape[0] == 5  # [CLS] [D] hello world [SEP]: "," and "!" dropped
    assert all(torch.allclose(t.norm(dim=1), torch.ones(len(t)), atol=1e-5) for t in documents)


async def test_colbert_ir_attend_to_mask_tokens_from_artifact_metadata(tmp_path):
    meta = {"query_maxlen": 24, "doc_maxlen": 64, "attend_to_mask_tokens": True, "dim": 128}
    folder = str(build_colbert_with_metadata(tmp_path / "c", meta))
    forms = describe_model(folder).input_forms
    assert forms is not None and forms.query.attend_to_expansion
    assert (forms.query.max_length, forms.document.max_length) == (24, 64)
    queries, documents = await encode_forms(load_model(ModelConfig(folder)), TEXTS)
    ref = ColbertIrReference(folder, query_maxlen=24, doc_maxlen=64, attend_to_mask_tokens=True)
    max_abs_diffs(queries, ref, "query")
    max_abs_diffs(documents, ref, "document")


async def test_colbert_ir_metadata_under_config_key_and_no_punctuation_mask(tmp_path):
    meta = {"config": {"mask_punctuation": False, "doc_maxlen": 300}, "meta": {}}
    folder = str(build_colbert_with_metadata(tmp_path / "c", meta))
    forms = describe_model(folder).input_forms
    assert forms is not None and not forms.document.skip_token_ids
    assert forms.document.max_length == 300
    async with AsyncEngine(load_model(ModelConfig(folder))) as engine:
        r = await engine.encode_one("Hello, world!", ["token_embed"])
    assert r["token_embed"].shape == (7, 128) and r.num_tokens == 7  # punctuation rows kept


# PyLate ----------------------------------------------------------------------------------------
PYLATE_CFG = {
    "query_prefix": "[Q] ",
    "document_prefix": "[D] ",
    "query_length": 24,
    "document_length": 100,
    "do_query_expansion": True,
    "attend_to_expansion_tokens": False,
    "skiplist_words": list(string.punctuation),
}


@pytest.mark.parametrize("attend", [False, True])
async def test_pylate_query_and_document_match_reference(tmp_path, attend):
    cfg = {**PYLATE_CFG, "attend_to_expansion_tokens": attend}
    folder = str(build_pylate(tmp_path / "p", cfg))
    model = load_model(ModelConfig(folder))
    forms = model.description.input_forms
    assert forms is not None and forms.source == "pylate"
    assert forms.query.marker_id == 30522 and forms.document.marker_id == 30523
    assert (forms.query.max_length, forms.document.max_length) == (24, 100)  # not the stale 23
    assert forms.query.attend_to_expansion is attend and not forms.query.placeholder
    queries, documents = await encode_forms(model, TEXTS)
    ref = PylateReference(folder, cfg)
    q = max_abs_diffs(queries, ref, "query")
    d = max_abs_diffs(documents, ref, "document")
    print(f"PyLate (attend={attend}) max abs diff: query {max(q):.2e}, document {max(d):.2e}")


async def test_pylate_without_query_expansion(tmp_path):
    cfg = {**PYLATE_CFG, "do_query_expansion": False, "attend_to_expansion_tokens": True}
    folder = str(build_pylate(tmp_path / "p", cfg))
    queries, _ = await encode_forms(load_model(ModelConfig(folder)), TEXTS)
    ref = PylateReference(folder, cfg)
    max_abs_diffs(queries, ref, "query")
    assert queries[3].shape == (7, 128)  # [CLS] [Q] hello , world ! [SEP]: no expansion


# Mixed batches ---------------------------------------------------------------------------------
def _requests(engine: AsyncEngine, texts, form_name, params):
    form = (
        engine.description.input_forms.form(form_name) if engine.description.input_forms else None
    )
    out = []
    for i, f in enumerate(engine._tokenize(list(texts), form)):
        loop_future = asyncio.get_running_loop().create_future()
        out.append(
            EncodeRequest(
                f"{form_name}{i}",
                f.ids,
                f.truncated,
                params,
                Lane.BULK,
                loop_future,
                key_mask_cpu=f.key_mask_cpu,
                keep_rows_cpu=f.keep_rows_cpu,
            )
        )
    return out


async def test_mixed_batch_of_queries_and_documents_equals_each_alone(colbert_model):
    params = (PoolingParams("token_embed"),)
    async with AsyncEngine(colbert_model) as engine:
        queries = _requests(engine, TEXTS, "query", params)
        documents = _requests(engine, TEXTS, "document", params)
        assert len(documents[15].token_ids) == 32  # shares the queries' equal-length run
        mixed = [r for pair in zip(documents, queries, strict=True) for r in pair]
        together = engine.runner.run(mixed)
        alone = [engine.runner.run([r])[0] for r in mixed]
    worst = max(
        float((a["token_embed"] - b["token_embed"]).abs().max())
        for a, b in zip(together, alone, strict=True)
    )
    assert worst < 1e-5, f"mixed vs alone: max abs diff {worst:.2e}"


async def test_engine_mixes_forms_and_callers(colbert_model, colbert_outputs):
    queries, documents = colbert_outputs
    async with AsyncEngine(colbert_model, max_batch_tokens=16384, record_batches=True) as engine:
        q, d = await asyncio.gather(
            engine.encode(TEXTS, ["token_embed"], input_form="query", lane=Lane.QUERY),
            engine.encode(TEXTS, ["token_embed"]),
        )
    for a, b in zip(q, queries, strict=True):
        torch.testing.assert_close(a["token_embed"], b, atol=1e-5, rtol=0)
    for a, b in zip(d, documents, strict=True):
        torch.testing.assert_close(a["token_embed"], b, atol=1e-5, rtol=0)


async def test_models_without_forms_ignore_input_form(multi_head, minilm):
    assert describe_model(minilm).input_forms is None
    tasks = ["embed", "sparse", "token_embed"]
    async with AsyncEngine(load_model(ModelConfig(multi_head))) as engine:
        assert engine.description.input_forms is None
        q = await engine.encode(TEXTS, tasks, input_form="query")
        d = await engine.encode(TEXTS, tasks)
    for a, b in zip(q, d, strict=True):
        assert a.num_tokens == b.num_tokens
        torch.testing.assert_close(a["embed"], b["embed"], atol=1e-6, rtol=0)
        torch.testing.assert_close(a["token_embed"], b["token_embed"], atol=1e-6, rtol=0)


# Errors and edges ------------------------------------------------------------------------------
async def test_truncate_false_names_the_form_limit_and_bad_form_is_refused(colbert_model):
    async with AsyncEngine(colbert_model) as engine:
        with pytest.raises(InputTooLongError, match="query form's max length 32"):
            await engine.encode([LONG_QUERY], ["token_embed"], input_form="query", truncate=False)
        r = await engine.encode_one(LONG_QUERY, ["token_embed"], truncate=False)
        assert not r.truncated  # fits the 220-token document form
        with pytest.raises(ValueError, match="input_form must be one of"):
            await engine.encode(["x"], ["token_embed"], input_form="passage")  # type: ignore[arg-type]


def test_packed_encoder_key_mask_matches_padded_hf(minilm):
    """The encoder's key mask against HF ``BertModel`` with attention mask 0 on those keys, and
    the padded fallback runner with the same mask."""
    from transformers import AutoModel

    from poolq.worker.engine.execution.fallback import PaddedAutoModelRunner

    hf = AutoModel.from_pretrained(minilm).eval()
    enc = PackedEncoder(EncoderSpec.from_hf_config(hf.config))
    enc.load_hf_state_dict(hf.state_dict())
    fallback = PaddedAutoModelRunner(Path(minilm), 0, torch.float32)
    g = torch.Generator().manual_seed(0)
    seq_lens = [12, 12, 7, 12, 5]
    ids = torch.randint(1000, 5000, (sum(seq_lens),), generator=g)
    key_mask_cpu = torch.ones(sum(seq_lens), dtype=torch.bool)
    key_mask_cpu[8:12] = False  # sequence 0: last four keys masked; sequence 1 unmasked
    key_mask_cpu[31 + 9 : 31 + 12] = False  # sequence 3
    with torch.inference_mode():
        got = enc(ids, seq_lens, key_mask_cpu=key_mask_cpu)
        got_fallback = fallback(ids, seq_lens, key_mask_cpu=key_mask_cpu)
        start = 0
        for n in seq_lens:
            want = hf(
                input_ids=ids[start : start + n][None],
                attention_mask=key_mask_cpu[start : start + n][None].long(),
            ).last_hidden_state[0]
            assert float((got[start : start + n] - want).abs().max()) < 2e-5
            assert float((got_fallback[start : start + n] - want).abs().max()) < 2e-5
            start += n
        unmasked = enc(ids, seq_lens)
    # an unmasked sequence in a masked run is unchanged
    assert float((got[12:24] - unmasked[12:24]).abs().max()) < 1e-5
    assert not torch.allclose(got[:12], unmasked[:12], atol=1e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
async def test_cuda_query_form_matches_cpu(colbert, colbert_outputs):
    queries, documents = colbert_outputs
    for dtype, tol in (("float32", 1e-3), ("bfloat16", 3e-2)):
        model = load_model(ModelConfig(colbert, device="cuda", dtype=dtype))
        q, d = await encode_forms(model, TEXTS)
        for a, b in zip(q + d, queries + documents, strict=True):
            torch.testing.assert_close(a, b, atol=tol, rtol=0)
