"""Pair forms: how a scoring model (``score``) reads a (query, text) pair, as token ids.

* :class:`SegmentPairs` (cross-encoders, ``*ForSequenceClassification``): the checkpoint's own
  tokenizer forms the pair, ``[CLS] query [SEP] text [SEP]`` (BERT) or ``<s> query </s></s>
  text </s>`` (RoBERTa, XLM-R), as sentence-transformers' ``CrossEncoder`` does. The token type
  ids (0 for the query's segment, 1 for the text's) go to the model where it reads them: a
  token-type embedding of two rows or more, and a tokenizer that passes them
  (``tokenizer_config.json`` ``model_input_names``).
* :class:`PromptPairs` (LLM rerankers in the Qwen3-Reranker form): the model card's template,
  a system prompt, ``<Instruct>: ...\\n<Query>: ...\\n<Document>: ...`` and the assistant's
  empty thinking block; the score is read at the last token.

A pair longer than the model's window is cut to fit, the query first: a cross-encoder's pair
by the tokenizer's ``longest_first`` rule (the longer of the two loses tokens until both fit; a
query shorter than half the window is never cut), the template's middle at its end (the
document's tail goes; the system prompt and the closing tokens always stay).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from poolq.worker.engine.checkpoints.checkpoint import read_json_object
from poolq.worker.engine.checkpoints.input_forms import FormedInput
from poolq.worker.engine.execution.tokenizer import TextTokenizer

QWEN3_RERANKER_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    'and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n'
    "<|im_start|>user\n"
)
QWEN3_RERANKER_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
QWEN3_RERANKER_INSTRUCTION = (
    "Given a web search query, retrieve relevant passages that answer the query"
)


class PairForm(Protocol):
    def form(self, tok: TextTokenizer, pairs: Sequence[tuple[str, str]]) -> list[FormedInput]:
        """Each (query, text) pair as the model's input."""
        ...


@dataclass(frozen=True)
class SegmentPairs:
    """The tokenizer's two-sequence form; ``type_ids``: whether the model reads the segments."""

    type_ids: bool

    def form(self, tok: TextTokenizer, pairs: Sequence[tuple[str, str]]) -> list[FormedInput]:
        done = tok.encode_pairs(list(pairs))
        return [FormedInput(t.ids, t.truncated, type_ids=t.type_ids if self.type_ids else None)
                for t in done]  # fmt: skip


@dataclass(frozen=True, eq=False)
class PromptPairs:
    """The Qwen3-Reranker template: ``prefix_ids`` + the tokenized middle (with the
    tokenizer's own special tokens, cut to ``max_length`` less the prefix and suffix) +
    ``suffix_ids``."""

    prefix_ids: tuple[int, ...]
    suffix_ids: tuple[int, ...]
    instruction: str
    middle: TextTokenizer  # the model's tokenizer, truncating at the middle's budget

    @classmethod
    def qwen3_reranker(
        cls, tok: TextTokenizer, max_length: int, instruction: str | None = None
    ) -> PromptPairs:
        def ids(text: str) -> tuple[int, ...]:
            return tuple(tok.backend.encode(text, add_special_tokens=False).ids)

        prefix, suffix = ids(QWEN3_RERANKER_PREFIX), ids(QWEN3_RERANKER_SUFFIX)
        budget = max_length - len(prefix) - len(suffix)
        if budget < 8:
            raise ValueError(
                f"max_length {max_length} leaves {budget} tokens for a pair after the reranker's "
                f"prompt ({len(prefix) + len(suffix)} tokens); expected at least 8"
            )
        return cls(
            prefix, suffix, instruction or QWEN3_RERANKER_INSTRUCTION, tok.with_max_length(budget)
        )

    def text(self, query: str, document: str) -> str:
        return f"<Instruct>: {self.instruction}\n<Query>: {query}\n<Document>: {document}"

    def form(self, tok: TextTokenizer, pairs: Sequence[tuple[str, str]]) -> list[FormedInput]:
        done = self.middle.encode_batch([self.text(q, d) for q, d in pairs])
        head, tail = list(self.prefix_ids), list(self.suffix_ids)
        return [FormedInput(head + t.ids + tail, t.truncated) for t in done]


def tokenizer_passes_type_ids(path: Path) -> bool:
    """Whether the folder's tokenizer hands token type ids to the model: its
    ``tokenizer_config.json`` ``model_input_names`` where it lists them, else yes."""
    names = read_json_object(path / "tokenizer_config.json").get("model_input_names")
    return not isinstance(names, list) or "token_type_ids" in names
