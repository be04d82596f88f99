"""Fenced code blocks of the README and the documentation pages, for the tests that run them.

A block is ```` ```LANG ```` (optionally followed by attributes, e.g. ```` ```python title="x" ````)
up to the closing fence. A block preceded by the line ``<!-- not-run -->`` is deliberately not
runnable: the tests skip it and say how many they skipped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOT_RUN = "<!-- not-run -->"

FENCE = re.compile(r"^```(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<body>.*?)^```\s*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    body: str
    not_run: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path, lang: str | None = None) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        if lang is not None and m.group("lang") != lang:
            continue
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        line = text.count("\n", 0, m.start()) + 1
        out.append(Block(path, line, m.group("lang"), m.group("body"), before == NOT_RUN))
    return out


def doc_pages() -> list[Path]:
    """Every Markdown page of the site, the generated reference pages included."""
    return sorted(DOCS.rglob("*.md"))
