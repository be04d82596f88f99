"""The file sets of ``eval_search.py`` (``--set plain``, ``--set documents``): each indexed as a
folder of files through a real worker, every question asked in every mode, and the requirement
that the default mode is at least as good as dense alone.

* ``plain``: the man pages rendered to text (``eval_plaintext.py``): no title, no headings,
  no pages; hit@1 and hit@3 of the default mode >= dense's.
* ``documents``: the real and made PDF, HTML, DOCX, PPTX and EPUB files of
  ``eval_documents.py``; doc hit@1, doc hit@3 and PDF page hit@3 of the default mode >= dense's.

Each returns the lines it prints and its misses (an empty list when the requirement is met).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.eval_plaintext import default_vs_dense, run, table

DOCUMENT_MEASURES = ("doc@1", "doc@3", "page@3")


def plain_set(out: Path) -> tuple[list[str], list[str]]:
    results = run(out / "plain")
    folder = results["sets"]["folder"]
    c = results["corpus"]
    lines = [
        f"plain: {c['pages']} man pages as .txt files ({c['chars'] / 1e6:.2f} M characters), "
        f"{folder['points']} chunks in {folder['ingest_s']:.0f} s; {results['questions']} "
        "questions, document level, limit 10",
        *table(results),
    ]
    return lines, [f"plain: {m}" for m in default_vs_dense(folder["modes"])]


def documents_set(out: Path) -> tuple[list[str], list[str]]:
    from benchmarks.eval_documents import measure

    results, _ = measure(out / "documents")
    t, default = results["table"], results["default"]
    lines = [
        f"documents: {len(results['files'])} files, {results['questions']} questions "
        f"({results['pdf_questions']} on PDFs), the default mode is {default}",
        "| mode | doc hit@1 | doc hit@3 | page hit@3 (PDF) |",
        "|---|---:|---:|---:|",
        *(
            f"| {m} | {s['doc@1']:.1f} | {s['doc@3']:.1f} | {s['page@3']:.1f} |"
            for m, s in t.items()
        ),
    ]
    misses = [
        f"documents: default ({default}) {k} {t[default][k]:.1f} below dense {t['dense'][k]:.1f}"
        for k in DOCUMENT_MEASURES
        if t[default][k] < t["dense"][k] - 1e-9
    ]
    return lines, misses
