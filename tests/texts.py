"""Deterministic, varied texts: 1 to 512+ tokens, unicode, punctuation, the empty string."""

from __future__ import annotations

import inspect
import random


def _docstrings() -> list[str]:
    import collections
    import json
    import pathlib
    import textwrap

    out: list[str] = []
    for mod in (collections, json, pathlib, textwrap, random, inspect):
        for _, obj in inspect.getmembers(mod):
            doc = inspect.getdoc(obj)
            if doc and len(doc) > 20:
                out.append(" ".join(doc.split()))
    return sorted(set(out))


SPECIAL = [
    "",
    " ",
    "a",
    "Hello, world!",
    "naïve café résumé — déjà vu",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "emoji 🚀🔥 and symbols ∑∫√ ≠ ≤",
    "tabs\tand\nnewlines\n\nparagraphs",
    "UPPER lower MiXeD 12345 3.14159 0xDEADBEEF",
    "word " * 600,  # far over the max length
    "The quick brown fox jumps over the lazy dog. " * 40,
]


def varied_texts(n: int = 220, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    docs = _docstrings()
    words = " ".join(docs).split()
    texts = list(SPECIAL)
    while len(texts) < n:
        kind = rng.random()
        if kind < 0.4:
            texts.append(rng.choice(docs))
        else:
            k = rng.choice([1, 2, 5, 20, 60, 150, 300, 500])
            start = rng.randrange(0, max(1, len(words) - k))
            texts.append(" ".join(words[start : start + k]))
    return texts[:n]
