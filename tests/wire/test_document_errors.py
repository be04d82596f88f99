"""Per-document error codes (``DocumentErrorRecord.code``): a refused document is a
``bad_request``; a document the worker could not encode carries its failure's code (a text too
long for the model is the request's fault, an engine that died is ``internal``); results written
before codes still read. Refused documents as the real validator writes them:
``test_records.py``; through a real worker: ``tests/integration/test_wire_records.py``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from poolq.wire.documents import Document
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.record import WireError
from poolq.wire.records.results import IngestResult
from poolq.worker.engine.engine import InputTooLongError
from poolq.worker.runtime.pipeline import _points


def test_a_document_that_could_not_be_encoded_carries_the_failures_code() -> None:
    vectorizer = SimpleNamespace(model_ids=lambda: {}, version="v1")
    rt: Any = SimpleNamespace(vectorizer=vectorizer)
    docs = [Document("long", "x"), Document("boom", "y")]
    failures = [InputTooLongError("600 tokens > 512"), RuntimeError("engine died")]
    _, _, errors = _points(rt, docs, [[object()], [object()]], failures, "now")
    records = [e.as_record() for e in errors]
    assert [(r.id, r.field, r.code) for r in records] == [
        ("long", "text", ErrorCode.BAD_REQUEST),
        ("boom", "text", ErrorCode.INTERNAL),
    ]
    assert records[1].error == "text: could not be encoded: engine died"
    wire = IngestResult(0, 0, records).to_wire()
    assert IngestResult.from_wire(wire, strict=True).errors == records


def test_a_document_error_without_a_code_does_not_decode() -> None:
    codeless = {"points": 0, "documents": 0, "errors": [{"id": "a", "field": "text", "error": "e"}]}
    with pytest.raises(WireError, match=r"^ingest result: errors\[0\]: code: missing"):
        IngestResult.from_wire(codeless, strict=True)
