"""The Markdown reader: headings, lists, code, tables, quotes; no markup in any block."""

from __future__ import annotations

from poolq.worker.parse.formats.markdown import read_markdown
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document
from tests.parse.made_files import leftover_markup

LIMITS = ParseLimits()
SOURCE = """---
title: "Front Matter Title"
tags: [a, b]
---
<h1 align="center">Project</h1>
<div align="center">Centered <b>intro</b></div>

Guide
=====

Some *emphasis*, **bold**, ~~gone~~, [a link](https://example.com), ![alt text](i.png),
`inline code`, <span>inline html</span> &amp; an entity.\\
After a hard break.

## Install

- first **step**
- second step
  1. nested [ref link][ref]

[ref]: https://example.com/ref

```python
def f():
    return {"a": 1}
```

| Name | Value |
|------|-------|
| *x*  | `1`   |

> A quoted paragraph.

<script>alert(1)</script>
<style>p { color: red }</style>
"""


def test_blocks_and_heading_paths_without_markup():
    doc = read_markdown(SOURCE.encode(), LIMITS)
    got = [(b.kind, b.headings, b.text) for b in doc.blocks]
    guide, install = ("Guide",), ("Guide", "Install")
    assert got == [
        ("heading", ("Project",), "Project"),
        ("paragraph", ("Project",), "Centered intro"),
        ("heading", guide, "Guide"),
        (
            "paragraph",
            guide,
            "Some emphasis, bold, gone, a link, alt text, inline code, inline html & an "
            "entity.\nAfter a hard break.",
        ),
        ("heading", install, "Install"),
        ("list", install, "first step"),
        ("list", install, "second step"),
        ("list", install, "nested ref link"),
        ("code", install, 'def f():\n    return {"a": 1}'),
        ("table", install, "Name | Value"),
        ("table", install, "x | 1"),
        ("paragraph", install, "A quoted paragraph."),
    ]
    prose = [b.text for b in doc.blocks if b.kind != "code"]
    assert leftover_markup(prose) == []
    assert not any("https://" in t or "alert" in t for t in prose)


def test_title_from_front_matter_else_the_first_heading():
    assert read_markdown(SOURCE.encode(), LIMITS).title == "Front Matter Title"
    assert read_markdown(b"Intro text.\n\n# First\n\nx", LIMITS).title == "First"
    assert read_markdown(b"no heading at all", LIMITS).title is None


def test_read_document_reads_markdown_by_content_or_name():
    assert read_document(b"# Notes\n\nSome *words*.", "notes").mime == "text/markdown"
    doc = read_document(b"Just **bold** words.", "README.md")
    assert doc.mime == "text/markdown" and [b.text for b in doc.blocks] == ["Just bold words."]
