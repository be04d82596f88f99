"""Text-extraction libraries the parse stage could use, measured on the real corpus.

    python benchmarks/parse_candidates.py [--corpus build/parse-corpus] [--rounds 3] [--quick]
                                          [--only NAME ...]

Each candidate reads every file of its type in ``parse_corpus.py``'s corpus (built when
missing), in this process; a round runs the candidates one after the other, their order
rotating between rounds, and each figure is the best of ``--rounds``: process CPU time
(``time.process_time()``, all threads) per unit: a PDF page, an HTML file, a PPTX slide, a
DOCX / EPUB / Markdown file. Peak RSS: a fresh child process imports the library, notes its
RSS, reads the type's largest file (most pages; most bytes) and reports ``VmHWM`` minus that.

Quality, measured on the same output:

* PDF: share of pages with text (20+ non-space characters), ligature characters (U+FB00-FB06)
  and line-end hyphens left in (a lowercase letter, a hyphen and a line break or pdfium's
  U+FFFE mark of one, a lowercase letter) per 100 pages;
* HTML: ``boilerplate``: of the lines seen on over half of a site's pages (its navigation,
  "previous | next" bars, footers: taken from each page's full text), the share still in the
  output; ``recall``: the share of the pages' content paragraphs (``<p>`` of 60+ characters
  outside nav/header/footer/sidebars) found in the output (whitespace ignored).

``ours`` is ``poolq.worker.parse.readers.read_document`` when the readers exist. The table
goes to stdout and to ``build/parse-candidates.md``. Not candidates, and not measured:
ebooklib, PyMuPDF / pymupdf4llm (AGPL), kreuzberg (Elastic License).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import logging
import os
import platform
import re
import subprocess
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_parse import cpu_model, ours, pdfium_pages, pypdf_pages
from benchmarks.parse_corpus import DEFAULT_OUT, ROOT, load, of_kind
from benchmarks.procs import cpu_counters, cpu_pressure, steal_pct


def pdfplumber_pages(path: Path) -> list[str]:
    import pdfplumber

    out = []
    with pdfplumber.open(str(path)) as pdf:
        for page in pdf.pages:
            out.append(page.extract_text() or "")
            page.close()  # its cached objects: else memory grows with the pages read
    return out


def docling_pages(path: Path) -> list[str]:
    from docling_parse.pdf_parser import ContentConfig, DoclingPdfParser
    from docling_parse.pdf_parser import ContentLevel as L

    # text lines only: characters and words computed, not returned; no shapes or images
    cc = ContentConfig(
        char_cells_content_level=L.COMPUTE, word_cells_content_level=L.COMPUTE,
        shapes_content_level=L.SKIP, bitmaps_content_level=L.SKIP,
    )  # fmt: skip
    doc, out = DoclingPdfParser().load(path, content_config=cc), []
    for no in range(1, doc.number_of_pages() + 1):
        out.append("\n".join(c.text for c in doc.get_page(no).textline_cells))
        doc.unload_pages((no, no + 1))
    doc.unload()
    return out


def html_text(lib: str) -> Callable[[Path], str]:
    """The page's text by ``lib`` (selectolax: the whole body; the others: main content)."""

    def run(path: Path) -> str:
        page = path.read_bytes().decode("utf-8", "replace")
        if lib == "selectolax":
            from selectolax.lexbor import LexborHTMLParser

            body = LexborHTMLParser(page).body
            return body.text(separator="\n") if body is not None else ""
        if lib == "trafilatura":
            import trafilatura

            return trafilatura.extract(page) or ""
        if lib == "inscriptis":
            import inscriptis

            return inscriptis.get_text(page)
        from resiliparse.extract.html2text import extract_plain_text

        return extract_plain_text(page, main_content=True)

    return run


def office_text(path: Path) -> list[str]:
    """python-docx: one text (paragraphs, then table cells); python-pptx: one a slide."""
    import docx
    import pptx

    if path.suffix == ".pptx":
        slides = pptx.Presentation(str(path)).slides
        return [
            "\n".join(s.text_frame.text for s in sl.shapes if s.has_text_frame) for sl in slides
        ]
    doc = docx.Document(str(path))
    cells = [c.text for t in doc.tables for r in t.rows for c in r.cells]
    return ["\n".join([p.text for p in doc.paragraphs] + cells)]


def markdown_text(path: Path) -> list[str]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(path.read_text("utf-8", "replace"))
    return ["\n".join(t.content for t in tokens if t.type in ("inline", "fence", "code_block"))]


def epub_text(path: Path) -> list[str]:
    """Each XHTML member's text (lxml.html): the reading a spine walk adds nothing to time."""
    from lxml import html

    z = zipfile.ZipFile(path)
    names = [n for n in z.namelist() if n.endswith((".xhtml", ".html", ".htm"))]
    return [html.fromstring(z.read(n)).text_content() for n in names]


# type -> [(name, distribution, function)]; "ours" and anything not installed drop out at run
CANDIDATES: dict[str, list[tuple[str, str, Callable[[Path], object]]]] = {
    "pdf": [("pypdfium2", "pypdfium2", pdfium_pages), ("pypdf", "pypdf", pypdf_pages),
            ("pdfplumber", "pdfplumber", pdfplumber_pages),
            ("docling-parse", "docling-parse", docling_pages), ("ours", "poolq", ours)],
    "html": [*((n, n, html_text(n)) for n in ("selectolax", "trafilatura", "inscriptis",
                                              "resiliparse")), ("ours", "poolq", ours)],
    "docx": [("python-docx", "python-docx", office_text), ("ours", "poolq", ours)],
    "pptx": [("python-pptx", "python-pptx", office_text), ("ours", "poolq", ours)],
    "epub": [("zipfile+lxml", "lxml", epub_text), ("ours", "poolq", ours)],
    "md": [("markdown-it-py", "markdown-it-py", markdown_text), ("ours", "poolq", ours)],
}  # fmt: skip
UNIT = {"pdf": "page", "html": "page", "pptx": "slide"}
_WS = re.compile(r"\s+")
# a hyphen and a line break, or pdfium's U+FFFE mark of a hyphen it took out of a line's end
_HYPHEN = re.compile("[a-z](?:[-\u00ad\x02]\r?\n|\ufffe\r?\n?)[a-z]")
_LIGATURE = re.compile("[\ufb00-\ufb06]")
_NOT_CONTENT = re.compile(r"sidebar|related|footer|header|nav|menu|breadcrumb", re.I)


def license_of(dist: str) -> str:
    meta = md.metadata(dist)
    text = meta.get("License-Expression") or meta.get("License") or ""
    classifiers = [c.rsplit("::", 1)[1].strip() for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::")]  # fmt: skip
    text = text if text and len(text) < 60 else ", ".join(classifiers) or "?"
    return text.split(", dep")[0].removesuffix(" License")


def html_reference(files: list[dict[str, object]]) -> dict[Path, tuple[list[str], list[str]]]:
    """Each HTML file's (boilerplate lines, content paragraphs), whitespace removed."""
    from selectolax.lexbor import LexborHTMLParser

    lines, paras = {}, {}
    for e in files:
        tree = LexborHTMLParser(Path(str(e["file"])).read_bytes().decode("utf-8", "replace"))
        text = tree.body.text(separator="\n") if tree.body is not None else ""
        lines[e["file"]] = {s for s in (_WS.sub(" ", x).strip() for x in text.split("\n"))
                            if len(s) >= 8 and not s.isdigit()}  # fmt: skip
        keep = []
        for p in tree.css("p"):
            node, chrome = p, False
            while node is not None and not chrome:
                ident = f"{node.tag} {node.attributes.get('class')} {node.attributes.get('id')}"
                chrome, node = bool(_NOT_CONTENT.search(ident)), node.parent
            if not chrome and len(t := _WS.sub("", p.text())) >= 60:
                keep.append(t)
        paras[e["file"]] = keep
    out = {}
    for pkg in {e["package"] for e in files}:
        group = [e["file"] for e in files if e["package"] == pkg]
        seen = Counter(s for f in group for s in lines[f])
        common = {s for s, n in seen.items() if n > len(group) / 2} if len(group) >= 5 else set()
        for f in group:
            out[f] = ([_WS.sub("", s) for s in lines[f] & common], paras[f])
    return out


def quality(kind: str, outputs: dict[Path, object], ref: dict) -> str:
    refused = sum(not v for v in outputs.values())  # type: ignore[misc]
    return _quality(kind, outputs, ref) + (f"; no text from {refused} files" if refused else "")


def _quality(kind: str, outputs: dict[Path, object], ref: dict) -> str:
    if kind == "pdf":
        pages = [p for v in outputs.values() for p in v]  # type: ignore[attr-defined]
        full = sum(len(_WS.sub("", p)) >= 20 for p in pages)
        lig = sum(len(_LIGATURE.findall(p)) for p in pages)
        hyph = sum(len(_HYPHEN.findall(p)) for p in pages)
        per100 = 100 / max(1, len(pages))
        return (f"text on {100 * full / max(1, len(pages)):.1f}% of pages; ligatures "
                f"{lig * per100:.1f}, line-end hyphens {hyph * per100:.1f} /100 pages")  # fmt: skip
    if kind == "html":
        kept = found = nb = np_ = 0
        for f, out in outputs.items():
            flat = _WS.sub("", out if isinstance(out, str) else "".join(out))  # type: ignore
            boiler, paras = ref[f]
            kept += sum(s in flat for s in boiler)
            found += sum(p in flat for p in paras)
            nb, np_ = nb + len(boiler), np_ + len(paras)
        kept_pct, recall = 100 * kept / max(1, nb), 100 * found / max(1, np_)
        return f"boilerplate kept {kept_pct:.0f}%, paragraph recall {recall:.1f}%"
    chars = sum(len("".join(v)) for v in outputs.values())  # type: ignore[call-overload]
    return f"{chars / max(1, len(outputs)) / 1000:.0f}k characters a file"


def vm_kb(key: str) -> int:
    return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith(key + ":"))


def child_rss(kind: str, name: str, small: str, large: str) -> None:
    """In a fresh process: peak RSS reading ``large`` above the RSS after reading ``small`` (the
    library imported and warm), in MB."""
    fn = next(f for n, _, f in CANDIDATES[kind] if n == name)
    fn(Path(small))
    base = vm_kb("VmRSS")
    fn(Path(large))
    print(json.dumps((vm_kb("VmHWM") - base) / 1024))


def rss_delta(kind: str, name: str, small: object, large: object) -> str:
    r = subprocess.run([sys.executable, __file__, "--rss", kind, name, str(small), str(large)],
                       capture_output=True, text=True, timeout=1800)  # fmt: skip
    return f"{float(r.stdout.split()[-1]):.0f}" if r.returncode == 0 else "failed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a quarter of the files, one round")
    ap.add_argument("--only", nargs="*", default=None, help="candidates (or types) to run")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "parse-candidates.md")
    ap.add_argument("--rss", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss:
        child_rss(*args.rss)
        return 0
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # "fontTools is required..." a page
    entries = load(args.corpus)
    rounds = 1 if args.quick else args.rounds
    pressure, before = cpu_pressure(), cpu_counters()
    rows, failed = [], []
    for kind, cands in CANDIDATES.items():
        files = of_kind(entries, kind)[:: 4 if args.quick else 1]
        paths = [Path(str(e["file"])) for e in files]
        live = []
        for name, dist, fn in cands:
            if args.only and name not in args.only and kind not in args.only:
                continue
            try:
                fn(paths[0])  # imports the library, warms its caches
                live.append((name, dist, fn))
            except Exception as e:  # not installed, or the readers are not there yet
                failed.append(f"{kind}/{name}: {type(e).__name__}: {str(e)[:120]}")
        best: dict[str, float] = {}
        outs: dict[str, dict[Path, object]] = {}
        n_units: dict[str, int] = {}
        for r in range(rounds):
            for name, _dist, fn in live[r % max(1, len(live)) :] + live[: r % max(1, len(live))]:
                t0 = time.process_time()
                out = {p: fn(p) for p in paths}
                best[name] = min(best.get(name, 1e9), time.process_time() - t0)
                print(f"  round {r + 1} {kind} {name}: {time.process_time() - t0:.1f}s",
                      file=sys.stderr, flush=True)  # fmt: skip
                n_units[name] = sum(len(o) if kind in ("pdf", "pptx") else 1 for o in out.values())
                outs.setdefault(name, out)
        ref = html_reference(files) if kind == "html" else {}
        key = (lambda e: int(e["pages"])) if kind == "pdf" else (lambda e: int(e["bytes"]))
        largest, smallest = max(files, key=key), min(files, key=key)
        for name, dist, _fn in live:
            unit = UNIT.get(kind, "file")
            ms = 1000 * best[name] / max(1, n_units[name])
            rows.append([kind, name, md.version(dist), license_of(dist), f"{ms:.2f} /{unit}",
                         rss_delta(kind, name, smallest["file"], largest["file"]),
                         quality(kind, outs[name], ref)])  # fmt: skip
            print(" | ".join(rows[-1]), flush=True)
        print(f"  ({kind}: {len(files)} files, largest {largest['path']})", flush=True)
    steal = steal_pct(before, cpu_counters())
    head = ["type", "library", "version", "license", "CPU ms", "peak RSS Δ MB", "quality"]
    table = [f"| {' | '.join(head)} |", f"|{'---|' * len(head)}"]
    table += [f"| {' | '.join(r)} |" for r in rows]
    note = (f"\n{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}. Best "
            f"of {rounds} rounds; CPU pressure at start {pressure}, steal {steal:.1f}%."
            f"\nNot run: {'; '.join(failed) or 'none'}\n")  # fmt: skip
    text = "\n".join(table) + "\n" + note
    print("\n" + text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
