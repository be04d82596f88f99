"""The special tokens a tokenizer wraps a text in (its CLS / SEP / BOS / EOS), as the tokenizer
declares them: the ``cls_token``, ``sep_token``, ``bos_token`` and ``eos_token`` of
``tokenizer_config.json`` and ``special_tokens_map.json`` (a name or an AddedToken object); for a
folder that declares none of them (``tokenizer.json`` alone), the tokens its post-processor adds
around an empty text. SPLADE leaves their rows out when asked (``splade_remove_special``), as
vLLM's SPLADE pooler leaves out CLS and SEP."""

from __future__ import annotations

from pathlib import Path

from poolq.worker.engine.checkpoints.checkpoint import read_json_object
from poolq.worker.engine.execution.tokenizer import TextTokenizer

ROLES = ("cls_token", "sep_token", "bos_token", "eos_token")
DECLARING_FILES = ("tokenizer_config.json", "special_tokens_map.json")


def boundary_token_ids(path: Path, tok: TextTokenizer) -> list[int]:
    """The ids of the declared CLS / SEP / BOS / EOS tokens that the vocabulary has, sorted;
    without declarations, the ids the tokenizer's post-processor wraps a text in."""
    names: list[str] = []
    for file in DECLARING_FILES:
        data = read_json_object(path / file)
        for role in ROLES:
            entry = data.get(role)
            content = entry.get("content") if isinstance(entry, dict) else entry
            if isinstance(content, str):
                names.append(content)
    if not names:
        return sorted(set(tok.encode_batch([""])[0].ids))
    return sorted({tid for name in names if (tid := tok.token_id(name)) is not None})
