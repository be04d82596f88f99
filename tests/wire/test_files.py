"""File documents as applications send them to be parsed: checked one by one, each problem
naming the document and its field."""

from __future__ import annotations

import pytest

from poolq.wire.documents import DocumentError
from poolq.wire.files import FileDocument, is_file_document, validate_file
from poolq.wire.records.codes import ErrorCode


def test_bytes_and_paths_are_file_documents():
    assert is_file_document({"id": "a", "bytes": b"%PDF"})
    assert is_file_document({"id": "a", "path": "/srv/a.pdf"})
    assert not is_file_document({"id": "a", "text": "hi"})
    f = validate_file({"id": "a", "path": "/srv/a.pdf"}, 0, max_file_bytes=10)
    assert f == FileDocument("a", None, "/srv/a.pdf", "/srv/a.pdf", {})
    g = validate_file({"id": "b", "bytes": b"x", "source": "b.pdf", "metadata": {"k": 1}}, 0,
                      max_file_bytes=10)  # fmt: skip
    assert g == FileDocument("b", b"x", None, "b.pdf", {"k": 1})


@pytest.mark.parametrize(
    "raw, field, words",
    [
        ({"id": "a", "bytes": b"x", "path": "/a"}, "bytes", "exactly one"),
        ({"id": "a"}, "id", "unknown"),  # (no bytes, no path: not a file, but checked as one)
        ({"id": "a", "bytes": "text"}, "bytes", "expected bytes"),
        ({"id": "a", "bytes": b"12345678901"}, "bytes", "over the limit of 10 bytes"),
        ({"id": "a", "path": "rel/a.pdf"}, "path", "absolute"),
        ({"id": "a", "bytes": b"x", "colour": 1}, "colour", "unknown field"),
        ({"id": "a", "bytes": b"x", "metadata": {"n": float("nan")}}, "metadata", "JSON"),
        ({"bytes": b"x"}, "id", "non-empty"),
    ],
)
def test_a_bad_file_document_names_its_field(raw, field, words):
    err = validate_file(raw, 3, max_file_bytes=10)
    assert isinstance(err, DocumentError)
    if raw == {"id": "a"}:
        assert err.field == "bytes"
        return
    assert err.field == field and words in err.message, err
    if field == "bytes" and "over" in words:
        assert err.code == ErrorCode.TOO_LARGE
