"""The demo prints every query's top hit in every mode as one table, with the line that says why
rerank may disagree: a rerank top hit that contradicts the hybrid and dense
hits printed below it looked like a bug."""

from __future__ import annotations

from poolq.worker.cli.demo import MODES, RERANK_NOTE, mode_table


def test_the_table_has_a_row_per_query_a_column_per_mode_and_the_note():
    tops = {
        "parse a JSON document": {
            "rerank": ("stdlib-0120", "Return a CSV reader."),
            "hybrid": ("stdlib-0031", "Deserialize a JSON document\nto a Python object."),
            "dense": ("stdlib-0031", "Deserialize a JSON document\nto a Python object."),
            "sparse": None,
        },
        "wrap long lines": {m: ("stdlib-0002", "Wrap a paragraph.") for m in MODES},
    }
    lines = mode_table(tops).splitlines()
    assert lines[0].split() == ["query", "rerank", "hybrid", "dense", "sparse"]
    assert lines[1].split() == [
        "parse", "a", "JSON", "document", "stdlib-0120", "stdlib-0031", "stdlib-0031", "-",
    ]  # fmt: skip
    assert lines[2].split()[-4:] == ["stdlib-0002"] * 4
    texts = lines[4:7]  # each hit's text, once, on one line
    assert texts[1].split() == ["stdlib-0031", "Deserialize", "a", "JSON", "document", "to", "a",
                                "Python", "object."]  # fmt: skip
    assert lines[-1] == RERANK_NOTE
    assert "not trained for late interaction" in RERANK_NOTE and "ColBERT" in RERANK_NOTE
