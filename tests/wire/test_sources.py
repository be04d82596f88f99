"""Where documents come from: folder ids are unique and stable for every file,
hidden files are skipped, skipped files are named, --include/--exclude globs; JSONL errors give
the file, the line and the whole reason."""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poolq.wire.sources import FolderSource, JsonlSource, _Globs, open_source


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def ids(source) -> list[str]:
    return [d["id"] for d in source.documents()]


def test_files_of_the_same_name_in_two_folders_get_different_ids(tmp_path):
    """They overwrote each other in one collection: both ids were 'notes.txt'."""
    a = tree(tmp_path / "team-a", {"notes.txt": "alpha"})
    b = tree(tmp_path / "team-b", {"notes.txt": "beta"})
    (doc_a,) = FolderSource(a).documents()
    (doc_b,) = FolderSource(b).documents()
    assert doc_a["id"] != doc_b["id"]
    assert doc_a["metadata"]["path"] == doc_b["metadata"]["path"] == "notes.txt"


def test_an_id_is_the_absolute_path_whatever_way_the_folder_is_named(tmp_path, monkeypatch):
    root = tree(tmp_path / "docs", {"sub/a.md": "x"})
    expected = (tmp_path / "docs" / "sub" / "a.md").resolve().as_posix()
    assert ids(FolderSource(root)) == [expected]
    monkeypatch.chdir(tmp_path)
    assert ids(FolderSource(Path("docs"))) == [expected]
    assert ids(FolderSource(Path("docs/../docs/"))) == [expected]
    assert ids(open_source("docs")) == [expected]


def test_hidden_files_and_folders_are_skipped_unless_asked_for(tmp_path):
    root = tree(
        tmp_path / "d",
        {"a.txt": "a", ".secret.txt": "s", ".git/notes.md": "g", "sub/.cache/b.md": "c"},
    )
    src = FolderSource(root)
    assert [d["metadata"]["path"] for d in src.documents()] == ["a.txt"]
    assert src.hidden == [".git", ".secret.txt", "sub/.cache"]
    with_hidden = FolderSource(root, hidden=True)
    assert sorted(d["metadata"]["path"] for d in with_hidden.documents()) == [
        ".git/notes.md", ".secret.txt", "a.txt", "sub/.cache/b.md",
    ]  # fmt: skip


def test_files_that_are_no_documents_are_skipped_and_named_with_their_type(tmp_path):
    root = tree(tmp_path / "d", {"a.txt": "a", "b.json": "{}", "c.rst": "c", "sub/d.MD": "# d",
                                 "f.css": "p { color: red }"})  # fmt: skip
    (root / "e.gif").write_bytes(b"GIF89a" + bytes(64))
    (root / "scan.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))  # a page for OCR
    (root / "report.pdf").write_bytes(b"<!doctype html><title>Not a PDF</title><p>hi")
    src = FolderSource(root)
    docs = list(src.documents())
    assert [d["metadata"]["path"] for d in docs] == [
        "a.txt", "c.rst", "report.pdf", "scan.png", "sub/d.MD"
    ]  # fmt: skip
    assert src.not_documents == ["b.json (a JSON file)", "e.gif (a GIF image)",
                                 "f.css (a stylesheet)"]  # fmt: skip
    assert docs[0] == {"id": (root / "a.txt").resolve().as_posix(), "bytes": b"a",
                       "source": "a.txt", "metadata": {"path": "a.txt"}}  # fmt: skip
    assert [f.mime for f in src.files()][2] == "text/html"  # the content, not the name


def test_include_and_exclude_globs_choose_what_is_read(tmp_path):
    root = tree(
        tmp_path / "d",
        {"a.txt": "a", "b.rst": "b", "drafts/c.rst": "c", "drafts/d.txt": "d", "e.md": "e"},
    )
    src = FolderSource(root, include=["*.rst", "*.txt"], exclude=["drafts/*"])
    assert [d["metadata"]["path"] for d in src.documents()] == ["a.txt", "b.rst"]
    assert src.excluded == ["drafts/c.rst", "drafts/d.txt"]
    assert src.not_included == ["e.md"]
    only_name = FolderSource(root, exclude=["d.txt"])  # a glob without '/' matches the name
    assert [d["metadata"]["path"] for d in only_name.documents()] == [
        "a.txt", "b.rst", "e.md", "drafts/c.rst"
    ]  # fmt: skip


def test_a_file_over_the_byte_limit_is_an_error_naming_it_and_the_rest_are_read(tmp_path):
    root = tree(tmp_path / "d", {"a.txt": "a", "b.txt": "b" * 101})
    src = FolderSource(root, max_file_bytes=100)
    assert [d["metadata"]["path"] for d in src.documents()] == ["a.txt"]
    (err,) = src.errors
    assert err == (
        f"{(root / 'b.txt').as_posix()}: 101 bytes, over the limit of 100 bytes per file "
        "(--max-file-bytes); not sent"
    )


def test_jsonl_errors_give_the_file_the_line_and_the_whole_reason(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps({"id": "a", "text": "ok"})
        + '\n{"id": "b", "text": "bro\n\n[1, 2]\n{"id": "c", "text": "x",}\n'
    )
    src = JsonlSource(path)
    assert [ref for ref, _ in src.entries()] == [f"{path}:1"]
    assert src.errors == [
        f"{path}:2: invalid JSON: Unterminated string starting at column 21",
        f"{path}:4: expected a JSON object, got a list",
        f"{path}:5: invalid JSON: Expecting property name enclosed in double quotes at column 25",
    ]


def test_folder_entries_are_named_by_their_path(tmp_path):
    root = tree(tmp_path / "d", {"x/a.txt": "a"})
    ((ref, doc),) = FolderSource(root).entries()
    assert ref == doc["id"] == (root / "x" / "a.txt").resolve().as_posix()


def test_a_missing_input_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl"):
        open_source(tmp_path / "nope.jsonl")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_a_symlinked_file_keeps_its_own_path_as_id(tmp_path):
    root = tree(tmp_path / "d", {"real.txt": "r"})
    (root / "link.txt").symlink_to(root / "real.txt")
    assert [d["metadata"]["path"] for d in FolderSource(root).documents()] == [
        "link.txt", "real.txt",
    ]  # fmt: skip
    assert len(set(ids(FolderSource(root)))) == 2


_PARTS = st.sampled_from(["a", "B", "notes", "x.md", "README.MD", "img.PNG", ".hid", "d", "a.b.c"])
_GLOBS = st.sampled_from(
    ["*", "*.md", "*.MD", "notes*", "?", "[ab]*", "d/*", "*/x.md", "a/*/c", "*.png"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PARTS, min_size=1, max_size=4), st.lists(_GLOBS, min_size=1, max_size=3))
def test_globs_match_as_fnmatch_on_the_name_or_the_path(parts, patterns):
    """A glob without '/' is fnmatch on the file name, one with '/' on the path inside the folder,
    case aside: the compiled globs give the same answer."""
    rel = "/".join(parts)
    name = rel.rsplit("/", 1)[-1]
    expected = any(
        fnmatch.fnmatchcase((rel if "/" in p else name).lower(), p.lower()) for p in patterns
    )
    assert _Globs(patterns)(rel) == expected
