import pytest

from poolq.wire.documents import Document, DocumentError, validate_document


def test_valid_document():
    doc = validate_document(
        {"id": "a", "text": "hello", "metadata": {"k": [1, 2.5, None, {"x": True}]}}, 0
    )
    assert isinstance(doc, Document) and doc.metadata["k"][3] == {"x": True}
    assert doc.content_hash == validate_document({"id": "b", "text": "hello"}, 1).content_hash


@pytest.mark.parametrize(
    ("raw", "ref", "field", "message"),
    [
        ("just a string", "#3", "document", "expected an object"),
        ({"text": "x"}, "#3", "id", "missing"),
        ({"id": 7, "text": "x"}, "#3", "id", "expected a string, got int"),
        ({"id": "d", "text": 5}, "d", "text", "expected a string, got a int"),
        ({"id": "d"}, "d", "text", "got missing"),
        ({"id": "d", "text": " \n\t "}, "d", "text", "empty"),
        ({"id": "d", "text": "x" * 101}, "d", "text", "101 bytes exceeds the limit of 100 bytes"),
        (
            {"id": "d", "text": "x", "metadata": [1]},
            "d",
            "metadata",
            "expected an object, got list",
        ),
        ({"id": "d", "text": "x", "metadata": {"b": b"\x00"}}, "d", "metadata", "b is a bytes"),
        ({"id": "d", "text": "x", "metadata": {"f": float("inf")}}, "d", "metadata", "inf"),
        ({"id": "d", "text": "x", "metadata": {1: "a"}}, "d", "metadata", "non-string key"),
        ({"id": "d", "text": "x", "extra": 1}, "d", "extra", "unknown field"),
    ],
)
def test_bad_documents_name_id_and_field(raw, ref, field, message):
    err = validate_document(raw, 3, max_bytes=100)
    assert isinstance(err, DocumentError)
    assert (err.ref, err.field) == (ref, field)
    assert message in err.message
    assert err.as_dict()["id"] == ref
