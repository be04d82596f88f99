"""The parse benchmarks' corpus: real documents from Debian's documentation packages.

    python benchmarks/parse_corpus.py [--out build/parse-corpus] [--cache build/parse-cache]

Downloads each package below with ``apt-get download`` (no install, no root needed; the
package lists must be current: ``apt-get update``), unpacks it with ``dpkg-deb -x`` under
``--cache`` and copies the chosen files into ``--out``, one folder a type:

* ``pdf/``: 12 manuals (about 1,650 pages) from five PDF producers: pdfTeX (texinfo, LaTeX,
  Sphinx, DocBook via dblatex), xdvipdfmx (DocBook, Japanese), Ghostscript (groff), Apache FOP,
  and a figure-heavy MiKTeX one;
* ``large/``: GNU Octave's manual (1,158 pages), the memory bound's file;
* ``html/``: about 270 pages from Sphinx (Python, Debian Policy, Developer's Reference),
  DocBook (Debian Reference, Maintainers' Guide), texinfo (Octave, Maxima, Asymptote),
  LaTeX2HTML (gnuplot) and hand-written HTML (Ghostscript);
* ``epub/``, ``md/``, ``txt/``: what the packages ship (Debian Policy and Developer's
  Reference EPUBs; READMEs; Debian Policy's plain-text editions);
* ``docx/``, ``pptx/``: no Debian package ships real Word or PowerPoint documents with text
  (python-docx's and python-pptx's own test files hold a few words each), so these are
  Debian Reference chapters converted with python-docx / python-pptx: headings, paragraphs,
  code and tables in Word's own styles, one slide per section.

``manifest.json`` lists every file with its package, version and pages (PDF pages, slides;
one for any other file). Re-running reuses the downloads (about 65 MB of ``.deb`` files in
``--cache``); ``--force`` rebuilds the folder.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "build" / "parse-corpus"
DEFAULT_CACHE = ROOT / "build" / "parse-cache"

# (type, package, glob inside the package, keep every Nth match)
SOURCES: list[tuple[str, str, str, int]] = [
    ("pdf", "debian-reference-en", "usr/share/debian-reference/debian-reference.en.pdf", 1),
    ("pdf", "debian-policy", "usr/share/doc/debian-policy/policy.pdf.gz", 1),
    ("pdf", "debian-policy", "usr/share/doc/debian-policy/fhs/fhs-3.0.pdf.gz", 1),
    ("pdf", "bash-doc", "usr/share/doc/bash/bashref.pdf", 1),
    ("pdf", "bash-doc", "usr/share/doc/bash/bash.pdf", 1),
    ("pdf", "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf", 1),
    ("pdf", "r-doc-pdf", "usr/share/R/doc/manual/R-intro.pdf", 1),
    ("pdf", "maint-guide", "usr/share/doc/maint-guide/maint-guide.en.pdf", 1),
    ("pdf", "ghostscript-doc", "usr/share/doc/ghostscript/GS9_Color_Management.pdf", 1),
    ("pdf", "maxima-doc", "usr/share/doc/maxima-doc/maximabook-19-Sept-2004.pdf.gz", 1),
    ("pdf", "auto-multiple-choice-doc-pdf", "usr/share/doc/auto-multiple-choice/*.ja.pdf", 1),
    ("pdf", "docbook-xsl-doc-pdf", "usr/share/doc/docbook-xsl-doc-pdf/doc/reference.pdf.gz", 1),
    ("large", "octave-doc", "usr/share/doc/octave/octave.pdf", 1),
    ("html", "python3.11-doc", "usr/share/doc/python3.11/html/library/*.html", 4),
    ("html", "python3.11-doc", "usr/share/doc/python3.11/html/tutorial/*.html", 1),
    ("html", "python3.11-doc", "usr/share/doc/python3.11/html/howto/*.html", 2),
    ("html", "debian-reference-en", "usr/share/debian-reference/*.en.html", 1),
    ("html", "developers-reference", "usr/share/developers-reference/*.html", 1),
    ("html", "debian-policy", "usr/share/doc/debian-policy/policy.html/*.html", 2),
    ("html", "maint-guide", "usr/share/doc/maint-guide/html/*.html", 1),
    ("html", "gnuplot-doc", "usr/share/doc/gnuplot/htmldocs/*.html", 20),
    ("html", "asymptote-doc", "usr/share/doc/asymptote/html/*.html", 10),
    ("html", "ghostscript-doc", "usr/share/doc/ghostscript/html/*.html", 2),
    ("html", "octave-doc", "usr/share/doc/octave/octave.html/[!X]*.html", 20),  # not XREF stubs
    ("html", "maxima-doc", "usr/share/doc/maxima-doc/html/*.html", 25),
    ("epub", "debian-policy", "usr/share/doc/debian-policy/policy.epub", 1),
    ("epub", "developers-reference", "usr/share/developers-reference/*.epub", 1),
    ("md", "zstd", "usr/share/doc/zstd/*.md*", 1),
    ("md", "golang-github-sirupsen-logrus-dev", "usr/share/doc/*/README.md.gz", 1),
    ("md", "debian-reference-common", "usr/share/doc/*/README.md.gz", 1),
    ("md", "bash-doc", "usr/share/doc/bash/examples/shellmath/README.md", 1),
    ("md", "pandoc-data", "usr/share/doc/pandoc-data/README.md.gz", 1),
    ("txt", "debian-policy", "usr/share/doc/debian-policy/*.txt.gz", 1),
]
# Debian Reference chapters converted to Word / PowerPoint (see the docstring)
CONVERTED = {"docx": ("ch01", "ch02", "ch09", "ch10"), "pptx": ("ch03", "ch05", "ch06", "ch12")}
REFERENCE_HTML = "usr/share/debian-reference/{}.en.html"


def fetch(pkg: str, cache: Path) -> tuple[Path, str]:
    """The package unpacked under ``cache`` (downloaded once) and its version."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{pkg}_*.deb"))
    if not found:
        r = subprocess.run(["apt-get", "download", pkg], cwd=debs, capture_output=True, text=True)
        found = sorted(debs.glob(f"{pkg}_*.deb"))
        if r.returncode != 0 or not found:
            sys.exit(f"apt-get download {pkg} failed (run apt-get update first?): {r.stderr}")
    deb = found[-1]
    tree = cache / "root" / pkg
    if not tree.is_dir():
        tmp = tree.parent / f"{pkg}.part"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
        tmp.rename(tree)
    return tree, deb.name.split("_")[1]


def pdf_pages(path: Path) -> int:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    try:
        return len(doc)
    finally:
        doc.close()


def html_blocks(html: bytes) -> list[tuple[str, object]]:
    """(tag, text or table rows) of a page's headings, paragraphs, code and tables in order."""
    from selectolax.lexbor import LexborHTMLParser

    out: list[tuple[str, object]] = []
    for node in LexborHTMLParser(html).css("h1, h2, h3, h4, p, pre, table"):
        parent, in_table = node.parent, False
        while parent is not None and not in_table:
            in_table, parent = parent.tag == "table", parent.parent
        if in_table:
            continue
        if node.tag == "table":
            rows = [[c.text(strip=True) for c in tr.css("td, th")] for tr in node.css("tr")]
            if rows and max(map(len, rows)):
                out.append(("table", rows))
        else:
            text = node.text() if node.tag == "pre" else " ".join(node.text().split())
            if text.strip():
                out.append((node.tag, text))
    return out


def to_docx(blocks: list[tuple[str, object]], dest: Path) -> int:
    import docx

    doc = docx.Document()
    for tag, body in blocks:
        if tag == "table":
            rows: list[list[str]] = body  # type: ignore[assignment]
            width = max(map(len, rows))
            table = doc.add_table(rows=len(rows), cols=width, style="Table Grid")
            for row, cells in zip(table.rows, rows, strict=True):
                for cell, text in zip(row.cells, cells, strict=False):
                    cell.text = text
        elif tag[0] == "h":
            doc.add_heading(str(body), level=int(tag[1]))
        else:
            doc.add_paragraph(str(body), style="Normal" if tag == "p" else "No Spacing")
    doc.save(str(dest))
    return 1


def to_pptx(blocks: list[tuple[str, object]], dest: Path) -> int:
    import pptx

    deck = pptx.Presentation()
    body = None
    for tag, text in blocks:
        if tag in ("h1", "h2", "h3"):
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = str(text)
            body = slide.placeholders[1].text_frame
        elif body is not None and tag in ("p", "pre") and len(body.paragraphs) < 8:
            para = body.paragraphs[0] if not body.text else body.add_paragraph()
            para.text = str(text)[:400]
    deck.save(str(dest))
    return len(deck.slides)


def copy(src: Path, dest: Path) -> Path:
    if src.suffix == ".gz":
        dest = dest.with_name(dest.name[: -len(".gz")])
        dest.write_bytes(gzip.decompress(src.read_bytes()))
    else:
        shutil.copyfile(src, dest)
    return dest


def build(out: Path, cache: Path) -> list[dict[str, object]]:
    shutil.rmtree(out, ignore_errors=True)
    entries: list[dict[str, object]] = []
    for kind, pkg, pattern, step in SOURCES:
        tree, version = fetch(pkg, cache)
        matches = sorted(p for p in tree.glob(pattern) if p.is_file() and p.stat().st_size)
        if not matches:
            sys.exit(f"{pkg} {version}: nothing matches {pattern}")
        (out / kind).mkdir(parents=True, exist_ok=True)
        for src in matches[::step]:
            dest = copy(src, out / kind / f"{pkg}--{src.parent.name}--{src.name}")
            pages = pdf_pages(dest) if kind in ("pdf", "large") else 1
            entries.append(
                {"path": f"{kind}/{dest.name}", "kind": kind, "package": pkg,
                 "version": version, "source": str(src.relative_to(tree)), "pages": pages}
            )  # fmt: skip
    tree, version = fetch("debian-reference-en", cache)
    for kind, chapters in CONVERTED.items():
        (out / kind).mkdir(parents=True, exist_ok=True)
        for ch in chapters:
            blocks = html_blocks((tree / REFERENCE_HTML.format(ch)).read_bytes())
            dest = out / kind / f"debian-reference--{ch}.{kind}"
            pages = (to_pptx if kind == "pptx" else to_docx)(blocks, dest)
            entries.append(
                {"path": f"{kind}/{dest.name}", "kind": kind, "package": "debian-reference-en",
                 "version": version, "source": REFERENCE_HTML.format(ch) + " (converted)",
                 "pages": pages}
            )  # fmt: skip
    for e in entries:
        e["bytes"] = (out / str(e["path"])).stat().st_size
    (out / "manifest.json").write_text(json.dumps(entries, indent=1))
    shutil.rmtree(cache / "root", ignore_errors=True)  # unpacked trees: the .deb files stay
    return entries


def load(corpus: Path = DEFAULT_OUT, build_missing: bool = True) -> list[dict[str, object]]:
    """The corpus's manifest (each entry's ``file`` an absolute path); built when missing."""
    manifest = corpus / "manifest.json"
    if not manifest.is_file():
        if not build_missing:
            sys.exit(f"no corpus at {corpus}: run benchmarks/parse_corpus.py first")
        build(corpus, DEFAULT_CACHE)
    entries = json.loads(manifest.read_text())
    for e in entries:
        e["file"] = corpus / e["path"]
    return entries


def of_kind(entries: list[dict[str, object]], kind: str) -> list[dict[str, object]]:
    return [e for e in entries if e["kind"] == kind]


def summary(entries: list[dict[str, object]]) -> str:
    lines = [f"{'type':6} {'files':>5} {'pages':>6} {'MB':>7}  packages"]
    for kind in dict.fromkeys(str(e["kind"]) for e in entries):
        group = of_kind(entries, kind)
        pkgs = sorted({f"{e['package']} {e['version']}" for e in group})
        mb = sum(int(e["bytes"]) for e in group) / 1e6  # type: ignore[call-overload]
        pages = sum(int(e["pages"]) for e in group)  # type: ignore[call-overload]
        lines.append(f"{kind:6} {len(group):5d} {pages:6d} {mb:7.1f}  {', '.join(pkgs)}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="downloads (.deb) go here")
    ap.add_argument("--force", action="store_true", help="rebuild even if the manifest exists")
    args = ap.parse_args()
    if args.force or not (args.out / "manifest.json").is_file():
        build(args.out, args.cache)
    entries = load(args.out, build_missing=False)
    print(f"corpus in {args.out}:\n{summary(entries)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
