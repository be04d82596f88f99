"""Input forms: how a model wants a text written as a query and as a document (ColBERT).

Late-interaction models encode the same text differently depending on its role. Both colbert-ir
(stanford-futuredata/ColBERT) and PyLate do the following:

* a marker token right after the first special token (``[CLS]``): ``[unused0]`` / ``[unused1]``
  for colbert-ir, ``"[Q] "`` / ``"[D] "`` (added tokens) for PyLate;
* a maximum length per form, marker and special tokens included (queries 32, documents 220
  colbert-ir / 180 PyLate by default);
* queries padded to exactly that length with ``[MASK]`` tokens ("query augmentation" /
  "expansion"); those positions are not attended to as keys unless the model says so
  (``attend_to_mask_tokens`` / ``attend_to_expansion_tokens``), but their output rows are kept;
* documents drop punctuation rows (colbert-ir ``mask_punctuation``, PyLate ``skiplist_words``)
  from their multi-vector.

colbert-ir tokenizes ``". " + text`` and overwrites the ``"."`` token with the marker; PyLate
tokenizes the text and inserts the marker. :attr:`InputForm.placeholder` covers both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import torch

from poolq.worker.engine.execution.tokenizer import TokenizedText

InputFormName = Literal["document", "query"]
INPUT_FORM_NAMES: tuple[InputFormName, ...] = get_args(InputFormName)


@dataclass(frozen=True, eq=False)
class FormedInput:
    """One text in its form, ready for the engine."""

    ids: list[int]
    truncated: bool
    # bool [n] host: False where the token is not attended to as a key; None: all are.
    key_mask_cpu: torch.Tensor | None = None
    # bool [n] host: rows kept in token-level outputs (token_embed); None: all are.
    keep_rows_cpu: torch.Tensor | None = None
    # a pair's segment of each token (token type ids), where the model reads them; None: 0s
    type_ids: list[int] | None = None


@dataclass(frozen=True)
class InputForm:
    """One form (query or document) of a model's inputs, in token ids."""

    max_length: int  # total tokens: special tokens and the marker included
    marker_id: int | None = None  # put right after the first special token
    placeholder: str = ""  # text put before the input; its first token becomes the marker
    expansion_id: int | None = None  # pad up to max_length with this token (query expansion)
    attend_to_expansion: bool = False  # whether expansion tokens are attended to as keys
    skip_token_ids: frozenset[int] = frozenset()  # rows dropped from token-level outputs

    def __post_init__(self) -> None:
        if self.max_length < 3:
            raise ValueError(f"an input form needs max_length >= 3, got {self.max_length}")
        if self.placeholder and self.marker_id is None:
            raise ValueError("a placeholder is only meaningful with a marker token")

    @property
    def content_tokens(self) -> int:
        """How many text tokens fit (what a chunker should aim for): max_length less
        ``[CLS]``, ``[SEP]`` and the marker."""
        return self.max_length - 2 - (self.marker_id is not None)

    def text(self, text: str) -> str:
        """The string to tokenize for ``text``."""
        return self.placeholder + text

    def apply(self, tok: TokenizedText) -> FormedInput:
        """Tokenized ``[first] content [last]`` (from :meth:`text`) -> this form's ids, masks."""
        ids = list(tok.ids)
        if len(ids) < 2:
            raise ValueError(
                f"expected a tokenization with a leading and a trailing special token, got {ids}"
            )
        if self.marker_id is not None:
            if self.placeholder:
                if len(ids) < 3:
                    raise ValueError(
                        f"expected the placeholder {self.placeholder!r} to yield a token, got {ids}"
                    )
                ids[1] = self.marker_id
            else:
                ids.insert(1, self.marker_id)
        truncated = tok.truncated
        if len(ids) > self.max_length:
            ids = ids[: self.max_length - 1] + ids[-1:]  # keep the trailing [SEP]
            truncated = True
        key_mask_cpu = None
        n_real = len(ids)
        if self.expansion_id is not None and n_real < self.max_length:
            ids += [self.expansion_id] * (self.max_length - n_real)
            if not self.attend_to_expansion:
                key_mask_cpu = torch.zeros(self.max_length, dtype=torch.bool)  # [L]
                key_mask_cpu[:n_real] = True
        keep_rows_cpu = None
        if self.skip_token_ids:
            skip_cpu = torch.tensor(sorted(self.skip_token_ids), dtype=torch.int64)
            keep = ~torch.isin(torch.tensor(ids, dtype=torch.int64), skip_cpu)  # [n]
            keep_rows_cpu = None if bool(keep.all()) else keep
        return FormedInput(ids, truncated, key_mask_cpu, keep_rows_cpu)


@dataclass(frozen=True)
class InputForms:
    """A model's query and document forms. ``source``: whose conventions they follow."""

    source: Literal["colbert-ir", "pylate"]
    query: InputForm
    document: InputForm

    def form(self, name: InputFormName) -> InputForm:
        if name not in INPUT_FORM_NAMES:
            raise ValueError(f"input_form must be one of {list(INPUT_FORM_NAMES)}, got {name!r}")
        return self.query if name == "query" else self.document
