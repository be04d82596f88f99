"""The README and the documentation speak to users about poolq as it is: no word of how it was
made (work items, sessions, what it was like before a change)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import ROOT, doc_pages

BANNED = re.compile(r"\b(issues?|sessions?|last turn|before this change)\b", re.I)
PAGES = [ROOT / "README.md", *doc_pages()]


def banned_words(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{n}: {m.group(0)!r} in {line.strip()!r}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for m in BANNED.finditer(line)
    ]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_history_words(path: Path) -> None:
    assert banned_words(path) == []


def test_the_rule_catches_them() -> None:
    for text in ("an Issue", "this session's run", "the last turn", "Before this change,"):
        assert BANNED.search(text), text
    for text in ("tissue", "issued", "sessional"):
        assert not BANNED.search(text), text
