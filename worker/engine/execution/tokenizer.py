"""Fast (Rust) tokenization with truncation at the model's max length, reported per text.

``tokenizers`` releases the GIL in ``encode_batch``, so tokenizing in a thread overlaps with the
forward pass running in the model thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenizers import Encoding, Tokenizer


@dataclass(frozen=True)
class TokenizedText:
    ids: list[int]
    truncated: bool  # the text had more tokens than the model's max length
    type_ids: list[int] | None = None  # a pair's segment of each token (encode_pairs)

    @property
    def num_tokens(self) -> int:
        return len(self.ids)


class TextTokenizer:
    def __init__(self, tokenizer: Tokenizer, max_length: int) -> None:
        self.max_length = max_length
        self._tok = tokenizer
        self._tok.no_padding()
        self._tok.enable_truncation(max_length=max_length)
        # ids and truncation only: no character offsets to track (``encode_batch_fast``: less
        # CPU, the same ids and overflow)
        self._encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        self._around = specials_around(tokenizer)  # for a chunk's ids alone (post_process)
        added = tokenizer.get_added_tokens_decoder()
        self.special_token_ids = frozenset(i for i, t in added.items() if t.special)
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)

    @classmethod
    def from_folder(cls, path: Path, max_length: int) -> TextTokenizer:
        tok_file = path / "tokenizer.json"
        if tok_file.is_file():
            tok = Tokenizer.from_file(str(tok_file))
        else:  # slow-tokenizer files only: let transformers convert them to a fast tokenizer
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(
                str(path), use_fast=True, trust_remote_code=False
            ).backend_tokenizer
        return cls(tok, max_length)

    @property
    def backend(self) -> Tokenizer:
        """The underlying ``tokenizers.Tokenizer`` (configured with truncation)."""
        return self._tok

    def token_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    def encode_batch(self, texts: list[str]) -> list[TokenizedText]:
        encodings = self._encode(texts, add_special_tokens=True)
        return [TokenizedText(e.ids, bool(e.overflowing)) for e in encodings]

    def encode_pairs(self, pairs: list[tuple[str, str]]) -> list[TokenizedText]:
        """Each pair as this tokenizer forms two sequences (``[CLS] a [SEP] b [SEP]``, with the
        segment of each token), cut to the max length by its own rule (``longest_first``: the
        longer sequence loses tokens first; both over half the window keep half each)."""
        encodings = self._encode(pairs, add_special_tokens=True)
        return [TokenizedText(e.ids, bool(e.overflowing), e.type_ids) for e in encodings]

    def with_max_length(self, max_length: int) -> TextTokenizer:
        """A copy of this tokenizer that truncates at ``max_length`` (this one is unchanged)."""
        return TextTokenizer(Tokenizer.from_str(self._tok.to_str()), max_length)

    def post_process(self, encodings: list[Encoding | list[int]]) -> list[TokenizedText]:
        """What :meth:`encode_batch` gives for texts this tokenizer's own pipeline (a copy
        without truncation, as chunking uses) has already split into ``encodings``, without
        special tokens: they are added, and the result truncated, here (no new tokenizing).
        An entry may be ids alone (a chunk's share of its document's tokens,
        ``chunks/token_slices.py``, only for tokenizers whose post-processor just puts special
        tokens around one sequence): they go around the ids here the same way."""
        out = []
        for e in encodings:
            if isinstance(e, list):
                out.append(self._with_specials(e))
                continue
            done = self._tok.post_process(e, None, True)
            out.append(TokenizedText(done.ids, bool(done.overflowing)))
        return out

    def _with_specials(self, ids: list[int]) -> TokenizedText:
        if self._around is None:
            raise ValueError(
                "token ids without their text for a tokenizer whose post-processor does more "
                "than put special tokens around them (chunks/token_slices.py)"
            )
        head, tail = self._around
        room = self.max_length - len(head) - len(tail)  # truncated as the tokenizer would
        return TokenizedText(head + ids[:room] + tail, len(ids) > room)


def specials_around(tokenizer: Tokenizer) -> tuple[list[int], list[int]] | None:
    """The special tokens ``tokenizer``'s post-processor puts before and after one sequence,
    when that is all it does (the same on two probes of one and three words), else None."""
    around = None
    for probe in ("a", "a b c"):
        encoding = tokenizer.encode(probe, add_special_tokens=False)
        ids = encoding.ids
        full = tokenizer.post_process(encoding, None, True).ids
        at = next((i for i in range(len(full) - len(ids) + 1) if full[i : i + len(ids)] == ids), -1)
        if not ids or at < 0:
            return None
        found = (full[:at], full[at + len(ids) :])
        if around is not None and found != around:
            return None
        around = found
    return around
