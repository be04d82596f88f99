"""The corpus of ``eval_documents.py``: real documentation from Debian packages and made files.

* ``real/``: five PDF manuals (the Filesystem Hierarchy Standard, the Debian New Maintainers'
  Guide, bash's manual page, R's "An Introduction to R", Ghostscript's colour management notes:
  DocBook, groff, texinfo and LaTeX producers, 355 pages) and five HTML pages (four pages of
  Python's Sphinx documentation, with sidebar, navigation and footer, and a Debian Policy
  chapter), fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` once, under
  ``build/parse-cache`` (the layout of ``benchmarks/parse_corpus.py``: they share downloads);
* ``made/``: two multi-page PDFs (running header and footer on every page, one with an outline),
  a DOCX, a PPTX, an EPUB and two HTML pages wrapped in boilerplate (navigation, cookie bar,
  sidebar, footer), built with ``tests/parse/made_files.py``: fictional facts, each on one known
  page or section, among sentences on nearby topics.

:func:`page_texts` reads every file independently of poolq's parsers (pypdfium2 per PDF page,
selectolax, python-docx, python-pptx per slide, the EPUB's XHTML files) so that
:func:`check_questions` can keep only the questions whose answer phrase occurs in exactly one
file, and for a paged file on exactly one page: the labelled one.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import textwrap
import unicodedata
import zipfile
from pathlib import Path
from typing import Any

from benchmarks.parse_corpus import fetch  # (the same download cache, build/parse-cache)
from tests.parse.made_files import docx_file, epub_file, html_page, pdf_pages, pptx_file

# the same layout as benchmarks/parse_corpus.py's, so that the two share their downloads
DEFAULT_CACHE = Path(__file__).resolve().parents[1] / "build" / "parse-cache"
PY_HTML = "usr/share/doc/python3.11/html/"
# (path in the corpus, Debian package, path inside the package)
REAL = [
    ("real/fhs-3.0.pdf", "debian-policy", "usr/share/doc/debian-policy/fhs/fhs-3.0.pdf.gz"),
    ("real/maint-guide.en.pdf", "maint-guide", "usr/share/doc/maint-guide/maint-guide.en.pdf"),
    ("real/bash.pdf", "bash-doc", "usr/share/doc/bash/bash.pdf"),
    ("real/R-intro.pdf", "r-doc-pdf", "usr/share/R/doc/manual/R-intro.pdf"),
    ("real/GS9_Color_Management.pdf", "ghostscript-doc",
     "usr/share/doc/ghostscript/GS9_Color_Management.pdf"),
    ("real/python-venv.html", "python3.11-doc", PY_HTML + "tutorial/venv.html"),
    ("real/python-floatingpoint.html", "python3.11-doc", PY_HTML + "tutorial/floatingpoint.html"),
    ("real/python-interactive.html", "python3.11-doc", PY_HTML + "tutorial/interactive.html"),
    ("real/python-sockets.html", "python3.11-doc", PY_HTML + "howto/sockets.html"),
    ("real/policy-docs.html", "debian-policy",
     "usr/share/doc/debian-policy/policy.html/ch-docs.html"),
]  # fmt: skip

# made PDFs: (title, running header, [(section title, [paragraphs])] one item a page)
CRANE = ("HC-40 Harbour Crane Operator Manual", "HC-40 Operator Manual - Revision C", [
    ("Introduction", ["This manual covers the HC-40 harbour crane built for container and "
     "break-bulk terminals.", "Read every chapter before the first shift. Keep the manual in "
     "the cabin, in the pocket behind the seat."]),
    ("Safety limits", ["The anemometer on the boom tip shows the wind speed in the cabin.",
     "Stop all lifting when wind gusts exceed 72 kilometres per hour and park the boom "
     "downwind.", "Lightning within ten kilometres also ends work for the day."]),
    ("Daily checks", ["Walk around the crane before the first lift of each shift.",
     "Inspect the hoist rope for broken wires and flattened strands.", "Check that the "
     "limit switches stop the hook before it reaches the boom head."]),
    ("Load chart", ["The safe load falls as the radius grows.", "The maximum load at a radius "
     "of 30 metres is 12 tonnes; at 15 metres it is 28 tonnes.", "Never add the weight of "
     "the spreader to the chart values twice."]),
    ("Hydraulic system", ["The pumps sit in the machinery house under the cabin.",
     "Fill the tank with ISO VG 46 hydraulic oil and replace the oil every 2,000 operating "
     "hours.", "Filters are changed at every oil change."]),
    ("Emergencies", ["If a drive does not respond, lower the load if it is safe to do so.",
     "The red mushroom button on the left armrest cuts power to all drives at once.",
     "Report every emergency stop in the logbook."]),
    ("Lubrication", ["Wipe old grease off before applying new grease.", "Grease the slewing "
     "ring every 50 operating hours with lithium soap grease.", "The boom hinge pins are "
     "greased monthly."]),
    ("Warranty", ["The warranty covers parts and labour for two years.", "Warranty claims must "
     "be filed within 90 days of the fault, with photographs of the damaged part."]),
])  # fmt: skip
GREENHOUSE = ("Greenhouse Tomato Trial 2023", "Greenhouse Trial Report 2023 - Internal", [
    ("Summary", ["Five tomato varieties were grown from March to October in the south "
     "greenhouse.", "This report gives yields, water use, pests and costs."]),
    ("Yields", ["Yields were weighed at every picking.", "The variety Moneymaker yielded 18.4 "
     "kilograms per square metre, the best of the five; Ailsa Craig came last."]),
    ("Irrigation", ["Water came from the rain tank until the end of June.", "In July the drip "
     "lines delivered 2.5 litres per plant per day, twice the spring rate."]),
    ("Pests", ["Aphids stayed below the action threshold all season.", "Whitefly was "
     "controlled with Encarsia formosa parasitic wasps released every week from May."]),
    ("Costs", ["Seed and compost were bought in February.", "Heating accounted for 41 percent "
     "of the running costs, labour for a third."]),
    ("Next steps", ["The irrigation timers will be replaced before spring.", "Next season the "
     "trial moves to the north greenhouse, which has better ventilation."]),
])  # fmt: skip
MEMO = [("Title", "Office relocation plan"), "This memo tells staff how the move will run.",
    ("Heading 1", "Timeline"), "Packing starts on Monday 4 March; the movers arrive on Friday "
    "8 March and the office reopens the following Monday.",
    ("Heading 1", "New address"), "The new office is on the third floor of 12 Quay Street, "
    "above the ferry ticket hall.",
    ("Heading 1", "Computers"), "IT will disconnect all desktop computers on Thursday "
    "afternoon; laptops go home with their owners.",
    ("Heading 1", "Parking"), "Staff parking moves to the Riverside garage, level B2; the new "
    "key cards open the barrier.",
    [["Team", "Room"], ["Finance", "3.14"], ["Design", "3.02"]]]  # fmt: skip
DECK = [("Q3 review", ["Third quarter results for the board"]),
    ("Revenue", ["Revenue reached 4.2 million euros, up 11 percent on the second quarter."]),
    ("Customer churn", ["Churn fell to 3.1 percent after the loyalty programme started."]),
    ("Hiring", ["We will hire six support engineers in Lisbon before December."]),
    ("Risks", ["The main risk is the delayed warehouse in Rotterdam."])]  # fmt: skip
BOOK = [
    ("The lamp", "<p>Every evening the keeper climbed 217 steps to the lamp room.</p>"),
    ("Supplies", "<p>The supply boat came every second Tuesday with paraffin and flour.</p>"),
    ("The storm", "<p>During the great storm of 1911 the fog horn sounded for 43 hours.</p>"),
    ("The ledger", "<p>The keeper's daughter Maren logged passing ships in a green ledger.</p>"),
]
ESPRESSO = (
    "Dialling in espresso",
    "<h1>Dialling in espresso</h1><p>Good espresso starts "
    "with fresh beans.</p><h2>Grind</h2><p>Adjust the grinder until a double shot of 18 grams "
    "of coffee yields 36 grams in the cup in about 28 seconds.</p><h2>Cleaning</h2><p>Descale "
    "the machine every two months with citric acid.</p><h2>Storage</h2><p>Keep beans in an "
    "airtight tin away from sunlight and use them within three weeks of roasting.</p>",
)
BIKE = ("Bike repair FAQ", "<h1>Bike repair FAQ</h1><h2>Tyres</h2><p>Pump road tyres to 6 bar "
    "and hybrid tyres to 4 bar.</p><h2>Chain</h2><p>Replace the chain once it has stretched by "
    "0.5 percent; a worn chain wears out the cassette.</p><h2>Brakes</h2><p>Brake pads need "
    "replacing when the groove in the pad is worn away.</p>")  # fmt: skip


def _pdf(spec: tuple[str, str, list[tuple[str, list[str]]]]) -> bytes:
    """One page a section: a running header, the section heading, the paragraphs wrapped at 80
    characters, and a "Page N of M" footer at the bottom (page chrome a reader must drop)."""
    title, header, sections = spec
    pages = []
    for number, (heading, paras) in enumerate(sections, start=1):
        lines = [header, "", f"# {heading}"]
        for para in paras:
            lines += [*textwrap.wrap(para, 80), ""]
        pages.append(lines + [""] * (50 - len(lines)) + [f"Page {number} of {len(sections)}"])
    outline = [(h, i, 0) for i, (h, _) in enumerate(sections, start=1)]
    return pdf_pages(pages, title=title, outline=outline if spec is CRANE else None)


def made_files() -> dict[str, bytes]:
    return {
        "made/crane-manual.pdf": _pdf(CRANE),
        "made/greenhouse-trial.pdf": _pdf(GREENHOUSE),
        "made/office-move.docx": docx_file(MEMO, title="Office relocation plan"),  # type: ignore[arg-type]
        "made/q3-review.pptx": pptx_file(DECK, title="Q3 review"),
        "made/keepers-log.epub": epub_file(BOOK, title="The Keeper's Log"),
        "made/espresso.html": html_page(ESPRESSO[1], title=ESPRESSO[0]),
        "made/bike-repair.html": html_page(BIKE[1], title=BIKE[0]),
    }


def build(out: Path, cache: Path = DEFAULT_CACHE) -> list[dict[str, Any]]:
    """The corpus in the folder ``out`` (rebuilt), and one entry a file (also written to
    ``manifest.json`` beside the folder: the folder holds the documents only)."""
    shutil.rmtree(out, ignore_errors=True)
    entries = []
    for rel, pkg, inner in REAL:
        tree, version = fetch(pkg, cache)
        data = (tree / inner).read_bytes()
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(gzip.decompress(data) if inner.endswith(".gz") else data)
        entries.append({"file": rel, "origin": f"{pkg} {version}: /{inner}"})
    for rel, data in made_files().items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
        entries.append({"file": rel, "origin": "made (tests/parse/made_files.py)"})
    for e in entries:
        e["pages"] = len(page_texts(out / e["file"]))
        e["bytes"] = (out / e["file"]).stat().st_size
    (out.parent / "manifest.json").write_text(json.dumps(entries, indent=1))
    return entries


def _html_text(data: bytes) -> str:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(data)
    for node in tree.css("script, style"):
        node.decompose()
    return tree.body.text(separator=" ") if tree.body is not None else ""


def page_texts(path: Path) -> list[str]:
    """The file's visible text, one item a page (PDF) or slide (PPTX), else one item."""
    data = path.read_bytes()
    if path.suffix == ".pdf":
        import pypdfium2 as pdfium

        pdf = pdfium.PdfDocument(data)
        try:
            return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
        finally:
            pdf.close()
    if path.suffix == ".html":
        return [_html_text(data)]
    if path.suffix == ".docx":
        import docx

        d = docx.Document(str(path))
        cells = [" | ".join(c.text for c in r.cells) for t in d.tables for r in t.rows]
        return ["\n".join([p.text for p in d.paragraphs] + cells)]
    if path.suffix == ".pptx":
        import pptx

        return [
            "\n".join(s.text_frame.text for s in slide.shapes if s.has_text_frame)
            for slide in pptx.Presentation(str(path)).slides
        ]
    if path.suffix == ".epub":
        with zipfile.ZipFile(path) as z:
            names = sorted(n for n in z.namelist() if n.endswith(".xhtml") and "nav" not in n)
            return ["\n".join(_html_text(z.read(n)) for n in names)]
    raise ValueError(f"no reader for {path}")


def norm(text: str) -> str:
    """For matching a phrase whatever the extraction did: NFKC, case folded, quotes and dashes
    plain, soft and end-of-line hyphens and every space removed."""
    text = unicodedata.normalize("NFKC", text).replace("\ufffe", "").replace("\u00ad", "")
    text = text.translate(str.maketrans("‘’“”−–—ˆ", "''\"\"---^"))
    return re.sub(r"\s+", "", text.casefold())


def check_questions(
    corpus: Path, questions: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """(the questions kept, why each other one was dropped): a question is kept when its answer
    phrase occurs in its file only, and, in a paged file, on its page only."""
    pages = {
        str(p.relative_to(corpus)): [norm(t) for t in page_texts(p)]
        for p in sorted(corpus.rglob("*"))
        if p.is_file()
    }
    kept, dropped = [], []
    for q in questions:
        phrase = norm(q["answer"])
        where = [(f, i + 1) for f, ts in pages.items() for i, t in enumerate(ts) if phrase in t]
        paged = q.get("page") is not None
        want = [(q["file"], q["page"] if paged else 1)]
        if where == want:
            kept.append(q)
        else:
            dropped.append(f"{q['id']}: {q['answer']!r} found at {where[:4]}, labelled {want}")
    return kept, dropped
