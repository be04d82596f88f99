"""A ColBERT checkpoint's query and document forms, read from its files.

* colbert-ir (``HF_ColBERT``): ``artifact.metadata`` (JSON, the settings either at the top level
  or under ``"config"``), else colbert-ir's defaults (:data:`COLBERT_IR_DEFAULTS`). The
  punctuation skiplist holds the first token id of each ``string.punctuation`` character.
* PyLate (sentence-transformers folder with a Dense projector): ``config_sentence_transformers.json``,
  else PyLate's defaults (:data:`PYLATE_DEFAULTS`).

Lengths larger than the model's own max length are clamped to it.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from poolq.worker.engine.checkpoints.input_forms import InputForm, InputForms
from poolq.worker.engine.execution.tokenizer import TextTokenizer

COLBERT_IR_DEFAULTS: dict[str, Any] = {
    "query_token_id": "[unused0]",
    "doc_token_id": "[unused1]",
    "query_maxlen": 32,
    "doc_maxlen": 220,
    "mask_punctuation": True,
    "attend_to_mask_tokens": False,
}
PYLATE_DEFAULTS: dict[str, Any] = {
    "query_prefix": "[Q] ",
    "document_prefix": "[D] ",
    "query_length": 32,
    "document_length": 180,
    "do_query_expansion": True,
    "attend_to_expansion_tokens": False,
    "skiplist_words": list(string.punctuation),
}


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _token_id(tok: TextTokenizer, token: str, what: str) -> int:
    tid = tok.token_id(token)
    if tid is None:
        raise ValueError(f"{what} {token!r} is not a token of the model's tokenizer")
    return tid


def mask_token_id(path: Path, tok: TextTokenizer) -> int:
    """The tokenizer's mask token (``tokenizer_config.json`` / ``special_tokens_map.json``,
    else ``[MASK]`` or ``<mask>``)."""
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        entry = _read_json(path / name).get("mask_token")
        content = entry.get("content") if isinstance(entry, dict) else entry
        if isinstance(content, str) and tok.token_id(content) is not None:
            return _token_id(tok, content, "mask token")
    for guess in ("[MASK]", "<mask>"):
        if tok.token_id(guess) is not None:
            return _token_id(tok, guess, "mask token")
    raise ValueError(
        f"{path}: query expansion needs a mask token; expected mask_token in "
        "tokenizer_config.json or a [MASK] / <mask> token, found none"
    )


def _check_template(tok: TextTokenizer) -> None:
    ids = tok.encode_batch([""])[0].ids
    if len(ids) != 2:
        raise ValueError(
            "ColBERT input forms need a tokenizer that wraps a text in one leading and one "
            f"trailing special token ([CLS] ... [SEP]); an empty text gave {ids}"
        )


def _positive_int(settings: dict[str, Any], key: str) -> int:
    value = settings[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 3:
        raise ValueError(f"ColBERT setting {key}: expected an int >= 3, got {value!r}")
    return value


def colbert_ir_forms(path: Path, tok: TextTokenizer, max_length: int) -> InputForms:
    raw = _read_json(path / "artifact.metadata")
    meta = raw["config"] if isinstance(raw.get("config"), dict) else raw
    s = {k: meta[k] if meta.get(k) is not None else d for k, d in COLBERT_IR_DEFAULTS.items()}
    _check_template(tok)
    skip: frozenset[int] = frozenset()
    if s["mask_punctuation"]:
        skip = frozenset(
            ids[0]
            for ids in (
                tok.backend.encode(symbol, add_special_tokens=False).ids
                for symbol in string.punctuation
            )
            if ids
        )
    query = InputForm(
        max_length=min(_positive_int(s, "query_maxlen"), max_length),
        marker_id=_token_id(tok, s["query_token_id"], "colbert-ir query_token_id"),
        placeholder=". ",
        expansion_id=mask_token_id(path, tok),
        attend_to_expansion=bool(s["attend_to_mask_tokens"]),
    )
    document = InputForm(
        max_length=min(_positive_int(s, "doc_maxlen"), max_length),
        marker_id=_token_id(tok, s["doc_token_id"], "colbert-ir doc_token_id"),
        placeholder=". ",
        skip_token_ids=skip,
    )
    return InputForms("colbert-ir", query, document)


def pylate_forms(path: Path, tok: TextTokenizer, max_length: int) -> InputForms:
    cfg = _read_json(path / "config_sentence_transformers.json")
    s = {k: cfg[k] if cfg.get(k) is not None else d for k, d in PYLATE_DEFAULTS.items()}
    _check_template(tok)

    def marker(key: str) -> int | None:
        prefix = s[key]
        if not isinstance(prefix, str):
            raise ValueError(f"PyLate {key}: expected a string, got {prefix!r}")
        return _token_id(tok, prefix, f"PyLate {key}") if prefix else None

    words = s["skiplist_words"]
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise ValueError(f"PyLate skiplist_words: expected a list of strings, got {words!r}")
    # PyLate maps each word with convert_tokens_to_ids; words that are not tokens are ignored here
    skip = frozenset(t for t in (tok.token_id(w) for w in words) if t is not None)
    expand = bool(s["do_query_expansion"])
    query = InputForm(
        max_length=min(_positive_int(s, "query_length"), max_length),
        marker_id=marker("query_prefix"),
        expansion_id=mask_token_id(path, tok) if expand else None,
        attend_to_expansion=expand and bool(s["attend_to_expansion_tokens"]),
    )
    document = InputForm(
        max_length=min(_positive_int(s, "document_length"), max_length),
        marker_id=marker("document_prefix"),
        skip_token_ids=skip,
    )
    return InputForms("pylate", query, document)
