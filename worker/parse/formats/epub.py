"""EPUB reader (zipfile through ``zip_guard``, lxml): the spine's chapters in reading order.

``META-INF/container.xml`` names the package document (OPF; without it, the first ``.opf`` in
the zip); its spine lists the chapters, its manifest their files. Each chapter (XHTML, or
HTML in old books) goes through the HTML reader's block extraction (``html.BlockWalker``) with
only scripts, styles, hidden elements and ``nav`` removed: a book has no site boilerplate,
and the navigation document itself is skipped when it is in the spine.

Headings: the chapters' own ``h1``-``h6``; the path carries from one chapter file to the next
(a part's ``h1`` in one file stays above the ``h2`` chapters of the next). A chapter file
without a heading takes its title from the table of contents (EPUB 3 ``nav``, else the EPUB 2
NCX) as its path. Title: the OPF's ``dc:title``. Blocks have no page.

No container or package document, XML that does not parse, a broken zip: ``CORRUPT``.
"""

from __future__ import annotations

import posixpath
from typing import Any
from urllib.parse import unquote, urldefrag

from lxml import etree

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.blocks import ParsedDocument
from poolq.worker.parse.clean import clean_text, one_line
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.html import HEADINGS, BlockWalker, parse_html
from poolq.worker.parse.formats.html_boilerplate import strip_never_text
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.zip_guard import CheckedZip

MIME = "application/epub+zip"
_CHAPTER_TYPES = ("application/xhtml+xml", "text/html", "application/x-dtbook+xml")
_NCX_TYPE = "application/x-dtbncx+xml"
_XML = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)
_ANY_HEADING = ", ".join(HEADINGS)


def read_epub(data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``data`` (an EPUB file) as blocks (no pages); see the module."""
    with CheckedZip(data, limits, "EPUB") as zf:
        try:
            return _read(zf)
        except (ParseError, MemoryError):
            raise
        except Exception as e:
            raise ParseError(ErrorCode.CORRUPT, f"not a readable EPUB: {one_line(str(e))}") from e


def _xml(raw: bytes) -> Any:
    root = etree.fromstring(raw, _XML)
    if root is None:
        raise ValueError("a package file is not XML")
    return root


def _local(el: Any) -> str:
    return etree.QName(el).localname if isinstance(el.tag, str) else ""


def _children(el: Any, name: str) -> list[Any]:
    return [c for c in el.iter() if _local(c) == name]


def _resolve(href: str, base: str) -> str:
    """A zip member's name from a link relative to the folder ``base`` (fragment dropped)."""
    return posixpath.normpath(posixpath.join(base, unquote(urldefrag(href)[0])))


def _package_path(zf: CheckedZip) -> str:
    if "META-INF/container.xml" in zf:
        for rootfile in _children(_xml(zf.read("META-INF/container.xml")), "rootfile"):
            path = rootfile.get("full-path")
            if path and path in zf:
                return path
    path = next((n for n in zf.names() if n.lower().endswith(".opf")), None)
    if path is None:
        raise ParseError(ErrorCode.CORRUPT, "not a readable EPUB: no package document (OPF)")
    return path


def _read(zf: CheckedZip) -> ParsedDocument:
    opf_path = _package_path(zf)
    opf = _xml(zf.read(opf_path))
    base = posixpath.dirname(opf_path)
    items: dict[str, tuple[str, str, str]] = {}  # id -> (path, media type, properties)
    for item in _children(opf, "item"):
        if item.get("id") and item.get("href"):
            items[item.get("id")] = (
                _resolve(item.get("href"), base),
                item.get("media-type", ""),
                item.get("properties", ""),
            )
    spine = next(iter(_children(opf, "spine")), None)
    title_el = next((t for t in _children(opf, "title") if (t.text or "").strip()), None)
    title = clean_text(title_el.text, join_lines=True) if title_el is not None else ""
    toc = _toc_titles(zf, items, spine)
    walker = BlockWalker()
    for ref in _children(spine, "itemref") if spine is not None else []:
        path, media, props = items.get(ref.get("idref", ""), ("", "", ""))
        if media not in _CHAPTER_TYPES or "nav" in props.split() or path not in zf:
            continue
        tree = parse_html(zf.read(path))
        strip_never_text(tree)
        for nav in tree.css("nav"):
            nav.decompose()
        body = tree.body or tree.root
        if body is None:
            continue
        if body.css_first(_ANY_HEADING) is None and path in toc:
            walker.stack = [(1, toc[path])]
        walker.walk(body)
    return ParsedDocument(MIME, title or None, walker.blocks, None)


def _toc_titles(
    zf: CheckedZip, items: dict[str, tuple[str, str, str]], spine: Any
) -> dict[str, str]:
    """Chapter file -> its first title in the table of contents (EPUB 3 nav, else NCX)."""
    titles: dict[str, str] = {}
    nav = next((p for p, _, props in items.values() if "nav" in props.split()), None)
    if nav is not None and nav in zf:
        tree = parse_html(zf.read(nav))
        for el in tree.css("nav"):
            if (el.attributes.get("epub:type") or "toc") != "toc":
                continue
            for a in el.css("a[href]"):
                text = clean_text(a.text(deep=True, separator=" "), join_lines=True)
                target = _resolve(a.attributes.get("href") or "", posixpath.dirname(nav))
                if text:
                    titles.setdefault(target, text)
    if titles:
        return titles
    ncx_id = spine.get("toc") if spine is not None else None
    ncx = items.get(ncx_id or "") or next((i for i in items.values() if i[1] == _NCX_TYPE), None)
    if ncx is not None and ncx[0] in zf:
        root = _xml(zf.read(ncx[0]))
        for point in _children(root, "navPoint"):
            label = next(iter(_children(point, "text")), None)
            content = next(iter(_children(point, "content")), None)
            if label is None or content is None or not content.get("src"):
                continue
            text = clean_text(label.text or "", join_lines=True)
            target = _resolve(content.get("src"), posixpath.dirname(ncx[0]))
            if text:
                titles.setdefault(target, text)
    return titles
