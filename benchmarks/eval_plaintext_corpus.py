"""The plain-text set of ``eval_search.py --set plain`` and ``eval_documents.py --plain``:
Debian's Linux manual pages (sections 2, 4, 5 and 7 of ``manpages`` and ``manpages-dev``)
rendered to plain text, one ``.txt`` file a page, and the questions of
``benchmarks/eval_plaintext_questions.jsonl``.

* The packages are fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` once,
  under ``build/parse-cache`` (``benchmarks/parse_corpus.py``'s cache, shared with
  ``eval_documents.py``); nothing else is downloaded, and the rendered text is never committed.
* Each page is rendered as a reader gets it, ``man -l PAGE | col -b`` with ``MANWIDTH=80`` in
  the C.UTF-8 locale (man-db and groff-base; ``col`` is in bsdextrautils): groff's layout,
  indented paragraphs, words hyphenated at line ends, no headings a parser could see. Pages of
  more than :data:`MAX_CHARS` characters (``proc.5``, ``bpf-helpers.7``, ``ptrace.2``...) are
  left out, which keeps one ingest within a few minutes on two cores.
* The questions are paraphrased needs ("make sure what I wrote is really on the disk before
  continuing" for ``fsync.2``), written by reading the pages before any run and not tuned to
  any mode; ``pages`` lists every page that answers (usually one; an overview page and its
  call's page where both do). ``kind`` is ``lexical`` when the question holds a rare word of
  its page (``SA_RESTART``, ``Nagle``, ``_GNU_SOURCE``), else ``paraphrase``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.parse_corpus import fetch

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "benchmarks" / "eval_plaintext_questions.jsonl"
DEFAULT_CACHE = ROOT / "build" / "parse-cache"
PACKAGES = ("manpages", "manpages-dev")
SECTIONS = ("man2", "man4", "man5", "man7")
MAX_CHARS = 50_000
TOOLS = {"man": "man-db", "groff": "groff-base", "col": "bsdextrautils"}


def _render(page: Path) -> str:
    env = os.environ | {"LC_ALL": "C.UTF-8", "MANWIDTH": "80"}
    man = subprocess.run(["man", "-l", str(page)], capture_output=True, env=env, check=True)
    col = subprocess.run(["col", "-b"], input=man.stdout, capture_output=True, check=True)
    return col.stdout.decode("utf-8")


def build(out: Path, cache: Path = DEFAULT_CACHE) -> dict[str, Any]:
    """The pages as ``out/NAME.SECTION.txt`` (the folder rebuilt); returns the manifest (also
    written beside the folder as ``OUT.json``): packages and versions, pages, characters."""
    missing = [pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None]
    if missing:
        raise SystemExit(
            f"the plain-text set renders man pages: apt-get install -y {' '.join(missing)}"
        )
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    versions, pages, chars, skipped = {}, 0, 0, []
    for pkg in PACKAGES:
        tree, versions[pkg] = fetch(pkg, cache)
        for section in SECTIONS:
            folder = tree / "usr" / "share" / "man" / section
            if not folder.is_dir():
                continue
            # the pages themselves: links (one page under several names) are left out
            for page in sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink()):
                text = _render(page)
                name = page.name.removesuffix(".gz")
                if len(text) > MAX_CHARS:
                    skipped.append(name)
                    continue
                (out / f"{name}.txt").write_text(text, encoding="utf-8")
                pages += 1
                chars += len(text)
    manifest = {"packages": versions, "pages": pages, "chars": chars, "too_long": skipped}
    out.with_suffix(".json").write_text(json.dumps(manifest, indent=1))
    return manifest


def page_of(doc_id: str | None) -> str | None:
    """The page a hit's document is (``fork.2`` for ``man/fork.2.txt``, a folder's file, or
    for ``fork.2``, a JSON-lines document's id)."""
    if doc_id is None:
        return None
    return doc_id.rsplit("/", 1)[-1].removesuffix(".txt")


def load_questions(folder: Path, path: Path = QUESTIONS) -> list[dict[str, Any]]:
    """The questions, each checked to have its pages in the rendered folder."""
    questions = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    for q in questions:
        absent = [p for p in q["pages"] if not (folder / f"{p}.txt").is_file()]
        if absent:
            raise SystemExit(f"{q['id']}: pages {absent} are not in {folder} (another release?)")
    return questions


def jsonl_documents(folder: Path) -> list[dict[str, Any]]:
    """The same pages as JSON-lines documents ``{"id": "fork.2", "text": ...}``, the text as
    the file holds it."""
    return [
        {"id": p.name.removesuffix(".txt"), "text": p.read_text(encoding="utf-8")}
        for p in sorted(folder.glob("*.txt"))
    ]
