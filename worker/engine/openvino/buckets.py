"""A packed batch cut into static length buckets.

OpenVINO's CPU plugin runs a BERT far faster on shapes it has seen than on a new length each
call (openvino #15831): every sequence is right-padded to the smallest bucket length that holds
it, and the sequences of one bucket run as one ``[rows, length]`` call.

``BUCKET_LENGTHS``: multiples of 16 up to 128, then steps of a quarter of a power of two;
padding stays under ~20% of a bucket's tokens and a 512-position model has 15 shapes.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

BUCKET_LENGTHS = (16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512)


def bucket_lengths(max_length: int, lengths: tuple[int, ...] = BUCKET_LENGTHS) -> tuple[int, ...]:
    """The bucket lengths of a model that takes ``max_length`` tokens: those below it, and it."""
    return (*(n for n in lengths if n < max_length), max_length)


@dataclass(frozen=True)
class Call:
    """One model call: sequences ``seqs`` (indices into the batch) padded to ``length``."""

    length: int
    seqs: tuple[int, ...]


def plan_calls(seq_lens: list[int], lengths: tuple[int, ...], budget: int) -> list[Call]:
    """Sequences grouped by bucket (longest bucket first), at most ``budget`` padded tokens per
    call (a sequence longer than the budget runs alone)."""
    by_bucket: dict[int, list[int]] = {}
    for i, n in enumerate(seq_lens):
        if n <= 0:
            continue
        k = bisect_left(lengths, n)
        if k == len(lengths):
            raise ValueError(f"sequence of {n} tokens is over the model's {lengths[-1]}")
        by_bucket.setdefault(lengths[k], []).append(i)
    calls: list[Call] = []
    for length in sorted(by_bucket, reverse=True):
        seqs = by_bucket[length]
        rows = max(1, budget // length)
        calls += [Call(length, tuple(seqs[a : a + rows])) for a in range(0, len(seqs), rows)]
    return calls


def padded_inputs(
    ids: np.ndarray,
    starts: list[int],
    seq_lens: list[int],
    call: Call,
    key_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(input_ids, attention_mask, valid)``, each ``[rows, length]``: right-padded with id 0;
    the attention mask is ``valid`` and the key mask (ColBERT), when given."""
    rows = len(call.seqs)
    out_ids = np.zeros((rows, call.length), dtype=np.int64)
    valid = np.zeros((rows, call.length), dtype=bool)
    attend = None if key_mask is None else np.zeros((rows, call.length), dtype=bool)
    for r, s in enumerate(call.seqs):
        a, n = starts[s], seq_lens[s]
        out_ids[r, :n] = ids[a : a + n]
        valid[r, :n] = True
        if attend is not None and key_mask is not None:
            attend[r, :n] = key_mask[a : a + n]
    mask = (valid if attend is None else attend).astype(np.int64)
    return out_ids, mask, valid


def spread(calls: list[Call], streams: int) -> list[Call]:
    """Calls for ``streams`` requests in flight: while there are fewer calls than streams, the
    one with the most rows is cut in two (a lone sequence stays whole), so every stream has
    work; the longest first, so that the last to finish are short."""
    calls = list(calls)
    while len(calls) < streams:
        big = max(range(len(calls)), key=lambda i: len(calls[i].seqs), default=None)
        if big is None or len(calls[big].seqs) < 2:
            break
        c = calls.pop(big)
        half = (len(c.seqs) + 1) // 2
        calls += [Call(c.length, c.seqs[:half]), Call(c.length, c.seqs[half:])]
    return sorted(calls, key=lambda c: -c.length * len(c.seqs))
