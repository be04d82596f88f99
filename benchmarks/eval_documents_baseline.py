"""The naive baseline of ``eval_documents.py``: what a first attempt at document search does.

Each file's text is taken the quick way, with nothing of poolq's parse stage:

* PDF: pypdf's ``extract_text()`` page by page (running headers, footers and page numbers
  stay in, hyphenated line ends stay split);
* HTML: selectolax's ``body.text()`` (navigation, sidebars, cookie bars, footers and inline
  scripts stay in);
* DOCX: python-docx's paragraphs (tables are left out); PPTX: the text frames of each slide;
  EPUB: ``body.text()`` of each XHTML file of the archive.

The text of a file is cut into 1,000-character windows, one after the other; a window's page is
the page it starts on. Each window becomes one JSONL document ``{"id", "text", "metadata":
{"file", "page"}}`` that poolq embeds with its dense model (MiniLM) alone: the baseline differs
from poolq in reading, splitting and citing, not in the embedding model.
"""

from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path
from typing import Any

WINDOW = 1000


def _body_text(data: bytes) -> str:
    from selectolax.lexbor import LexborHTMLParser

    body = LexborHTMLParser(data).body
    return body.text() if body is not None else ""


def naive_pages(path: Path) -> list[str]:
    """The file's text the naive way: one item a PDF page or slide, else one item."""
    if path.suffix == ".pdf":
        import pypdf

        logging.getLogger("pypdf").setLevel(logging.ERROR)  # "fontTools is required" per font
        return [page.extract_text() or "" for page in pypdf.PdfReader(path).pages]
    if path.suffix == ".html":
        return [_body_text(path.read_bytes())]
    if path.suffix == ".docx":
        import docx

        return ["\n".join(p.text for p in docx.Document(str(path)).paragraphs)]
    if path.suffix == ".pptx":
        import pptx

        return [
            "\n".join(s.text_frame.text for s in slide.shapes if s.has_text_frame)
            for slide in pptx.Presentation(str(path)).slides
        ]
    if path.suffix == ".epub":
        with zipfile.ZipFile(path) as z:
            names = sorted(n for n in z.namelist() if n.endswith((".xhtml", ".html")))
            return ["\n".join(_body_text(z.read(n)) for n in names)]
    raise ValueError(f"no reader for {path}")


def windows(corpus: Path, files: list[str]) -> list[dict[str, Any]]:
    """Every file's text in :data:`WINDOW`-character windows, each with its file and the page
    it starts on (None for a file without pages)."""
    out: list[dict[str, Any]] = []
    for rel in files:
        pages = naive_pages(corpus / rel)
        paged = len(pages) > 1 or rel.endswith((".pdf", ".pptx"))
        text, starts = "", []
        for page in pages:
            starts.append(len(text))
            text += page + "\n"
        for n, at in enumerate(range(0, len(text), WINDOW)):
            window = text[at : at + WINDOW]
            if not window.strip():
                continue
            page_no = sum(1 for s in starts if s <= at) if paged else None
            out.append(
                {"id": f"{rel}#w{n}", "text": window, "metadata": {"file": rel, "page": page_no}}
            )
    return out


def write_jsonl(docs: list[dict[str, Any]], dest: Path) -> None:
    dest.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))


def top_files(hits: list[Any], k: int = 3, per_file: int = 3) -> list[tuple[str, list[Any]]]:
    """Chunk-level hits (rank order) as the first ``k`` files, each with the pages of its best
    ``per_file`` windows: what a grouped poolq search gives (a document with its matching
    chunks), with the file as the document."""
    files: dict[str, list[Any]] = {}
    seen: set[str] = set()
    for h in hits:
        if h.doc_id in seen:  # a window of two chunks counts once
            continue
        seen.add(h.doc_id)
        meta = h.metadata or {}
        name = meta.get("file")
        if name not in files and len(files) == k:
            continue
        pages = files.setdefault(name, [])
        if len(pages) < per_file:
            pages.append(meta.get("page"))
    return list(files.items())
