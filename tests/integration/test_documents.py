"""Documents as people have them, through a real Redis and a real `poolq worker`: a folder of
every format with bad files among good ones, cited hits, and the byte limit. Files are made at
test time (tests/parse/made_files.py)."""

from __future__ import annotations

import json
import re

import pytest

from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from poolq.worker.parse.ocr_engine import missing
from tests.cli_process import poolq
from tests.parse.made_files import (
    docx_file,
    empty_docx,
    epub_file,
    html_page,
    pdf_pages,
    pptx_file,
    scanned_pdf,
    truncated_pdf,
    zip_bomb,
)
from tests.parse.made_scans import image_file, mixed_pdf

pytestmark = pytest.mark.slow
NO_OCR = missing()  # None where this machine has the ocr extra and its language data
FAX = ["The night ferry leaves the harbour when the tide turns,", "never before nine."]

PUMP = pdf_pages(
    [
        ["# Pump manual", "Keep the pump dry at all times."],
        ["# Installing", "Bolt the pump to a concrete floor with four anchors."],
        ["Tighten the anchors to forty newton metres with a torque wrench."],
    ],
    title="Pump manual",
    outline=[("Pump manual", 1, 0), ("Installing", 2, 1)],
)


def make_folder(root):
    (root / "sub").mkdir(parents=True)
    (root / "pump.pdf").write_bytes(PUMP)
    (root / "manual").write_bytes(pdf_pages([["# Fan manual", "Oil the fan bearings yearly."]]))
    (root / "guide.html").write_bytes(html_page(
        "<h1>Lighthouse guide</h1><p>The lamp turns every ten seconds.</p>"
        "<h2>Maintenance</h2><p>Clean the lens monthly with white vinegar.</p>",
        title="Lighthouse guide",
    ))  # fmt: skip
    (root / "really-html.pdf").write_bytes(
        b"<!doctype html><title>Ferry times</title><h1>Ferry</h1><p>The ferry sails at noon.</p>"
    )
    (root / "sub" / "notes.md").write_text(
        "# Harbour notes\n\nThe **harbour** master is *Ines*. See [the map](http://x.test).\n"
    )
    (root / "memo.docx").write_bytes(docx_file(
        [("Title", "Budget memo"), ("Heading 1", "Costs"), "The roof repair costs 900 euros."],
        title="Budget memo",
    ))  # fmt: skip
    (root / "deck.pptx").write_bytes(pptx_file(
        [("Quarterly review", ["Sales grew by a third."]), ("Next steps", ["Hire two welders."])]
    ))  # fmt: skip
    (root / "book.epub").write_bytes(epub_file([
        ("Chapter One", "<p>The whale surfaced beside the rowing boat.</p>"),
        ("Chapter Two", "<p>The crew sang all the way home.</p>"),
    ]))  # fmt: skip
    bad = {
        "secret.pdf": pdf_pages([["classified"]], encrypt_password="pw"),
        "scan.pdf": scanned_pdf(),
        "cut.pdf": truncated_pdf(),
        "empty.docx": empty_docx(),
        "bomb.docx": zip_bomb(),
    }
    for name, data in bad.items():
        (root / name).write_bytes(data)
    (root / "logo.gif").write_bytes(b"GIF89a" + bytes(64))
    (root / "fax.png").write_bytes(image_file([FAX]))  # a scan: read by OCR
    (root / "mixed.pdf").write_bytes(mixed_pdf(
        [("typed", ["A typed cover page about the harbour office."]
          + [f"The harbour office opens at {h} on weekdays, line {h}." for h in range(6, 14)]),
         ("scanned", ["The crane stops lifting when wind gusts exceed seventy kilometres."]
          + [f"Crane check {n}: inspect the slewing brake and the boom cables." for n in range(6)])]
    ))  # fmt: skip
    (root / "site.css").write_text("body { color: red }")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("documents")
    with LocalRedis(tmp / "redis") as redis, WorkerProcess(redis.url, tmp / "qdrant"):
        yield redis.url, tmp


@pytest.fixture(scope="module")
def ingested(live):
    url, tmp = live
    make_folder(tmp / "docs")
    r = poolq("enqueue", str(tmp / "docs"), "--collection", "docs", "--wait", "--json",
              "--redis-url", url)  # fmt: skip
    return url, tmp, r


def search(url, query, *extra):
    r = poolq("search", query, "--collection", "docs", "--json", "--redis-url", url, *extra)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_bad_files_get_their_codes_and_every_other_file_lands(ingested):
    _, _, r = ingested
    assert r.returncode == 1, r.stderr  # files were refused
    summary = json.loads(r.stdout)
    codes = {e["id"].rsplit("/", 1)[-1]: e["code"] for e in summary["errors"]}
    want = {
        "secret.pdf": "encrypted", "scan.pdf": "no_text", "cut.pdf": "corrupt",
        "empty.docx": "corrupt", "bomb.docx": "too_large",
    }  # fmt: skip
    if NO_OCR:  # the scan cannot be read here: no_text naming the extra
        want["fax.png"] = "no_text"
    assert codes == want
    for e in summary["errors"]:  # one line, naming the file
        name = e["id"].rsplit("/", 1)[-1]
        assert name in e["error"] and "\n" not in e["error"]
    assert summary["documents"] == (10 if NO_OCR is None else 9) and summary["failed_jobs"] == 0
    assert all("OCR" in e["error"] for e in summary["errors"] if e["code"] == "no_text")
    if NO_OCR:
        fax = next(e["error"] for e in summary["errors"] if "fax.png" in e["id"])
        assert "poolq[ocr]" in fax
    else:
        # the fax, the mixed PDF's scanned page, and scan.pdf's 2 pages (OCR found no text)
        assert summary["ocr_pages"] == 4
    assert re.search(r"skipped 2 files not documents: logo\.gif \(a GIF image\), "
                     r"site\.css \(a stylesheet\)", r.stderr)  # fmt: skip


@pytest.mark.skipif(NO_OCR is not None, reason=f"no OCR here: {NO_OCR}")
def test_scanned_pages_are_found_cited_by_page_and_marked_ocr(ingested):
    url, _, _ = ingested
    (hit, *_) = search(url, "when does the night ferry leave", "--chunks")
    assert hit["citation"]["source"] == "fax.png" and hit["citation"]["page_start"] == 1
    scans = search(url, "wind gusts crane", "--filter", "ocr=true", "--chunks", "--limit", "10")
    assert {h["citation"]["source"] for h in scans} <= {"fax.png", "mixed.pdf"}
    crane = next(h for h in scans if h["citation"]["source"] == "mixed.pdf")
    assert crane["citation"]["page_start"] == 2  # the scanned page; the typed one has no ocr
    typed = search(url, "harbour office cover", "--filter", "ocr=false", "--limit", "10")
    assert any(h["citation"]["source"] == "mixed.pdf" for h in typed)


def test_hits_cite_the_page_of_a_pdf(ingested):
    url, _, _ = ingested
    (hit, *_) = search(url, "what torque for the pump anchors")
    c = hit["citation"]
    assert c["source"] == "pump.pdf" and c["mime"] == "application/pdf"
    assert c["title"] == "Pump manual" and c["page_start"] <= 3 <= c["page_end"]
    assert c["headings"] == ["Pump manual", "Installing"]
    assert set(c) == {"source", "title", "mime", "page_start", "page_end", "headings"}
    table = poolq("search", "what torque for the pump anchors", "--collection", "docs",
                  "--redis-url", url).stdout  # fmt: skip
    assert re.search(r"pump\.pdf p\.\d(–\d)?", table), table


def test_content_decides_the_type_and_headings_are_cited(ingested):
    url, _, _ = ingested
    by_source = {h["citation"]["source"]: h["citation"] for h in search(url, "ferry sails noon")}
    assert by_source["really-html.pdf"]["mime"] == "text/html"
    fan = search(url, "oiling the fan", "--filter", "source=manual")  # a file without extension
    assert fan and fan[0]["citation"]["mime"] == "application/pdf"
    (lens, *_) = search(url, "how often to clean the lens")
    assert lens["citation"]["source"] == "guide.html"
    assert lens["citation"]["headings"] == ["Lighthouse guide", "Maintenance"]
    assert lens["citation"]["title"].startswith("Lighthouse guide")
    (slide, *_) = search(url, "hiring welders")
    assert slide["citation"]["source"] == "deck.pptx" and slide["citation"]["page_start"] == 2


def test_no_chunk_holds_markup_or_boilerplate(ingested):
    url, _, _ = ingested
    texts = []
    for q in ("lighthouse lamp", "harbour master", "whale", "cookie", "navigation menu"):
        for hit in search(url, q, "--chunks", "--limit", "20"):
            texts.append(hit["text"])
    assert texts
    for t in texts:
        assert "<" not in t and "&amp;" not in t and "**" not in t and "](" not in t, t
        assert "cookie" not in t.lower() and "function(" not in t and "{" not in t, t


def test_citation_fields_filter(ingested):
    url, _, _ = ingested
    pdfs = search(url, "manual", "--filter", "mime=application/pdf", "--limit", "10")
    assert pdfs and {h["citation"]["mime"] for h in pdfs} == {"application/pdf"}
    later = search(url, "anchors", "--filter", "page_start>=2", "--chunks", "--limit", "10")
    assert later and all(h["citation"]["page_start"] >= 2 for h in later)


def test_the_byte_limit_refuses_a_file_by_name_before_anything_is_sent(live):
    url, tmp = live
    folder = tmp / "limit"
    folder.mkdir()
    (folder / "small.txt").write_text("A short note on buoys.")
    (folder / "big.pdf").write_bytes(PUMP)
    r = poolq("enqueue", str(folder), "--collection", "limit", "--max-file-bytes", "1000",
              "--wait", "--json", "--redis-url", url)  # fmt: skip
    assert r.returncode == 1
    assert f"document '{(folder / 'big.pdf').resolve().as_posix()}': {len(PUMP)} bytes, over " \
           "the limit of 1000 bytes per file" in r.stderr  # fmt: skip
    assert json.loads(r.stdout)["documents"] == 1
