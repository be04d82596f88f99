"""A table's chunks each start with its header row: every chunk of rows reads alone, rows are
whole, a row wider than a chunk is cut between cells, and the spans point at the rows."""

from __future__ import annotations

from tokenizers import Tokenizer

from poolq.wire.documents import Document
from poolq.worker.chunks.chunking import Chunker, TokenCounter
from poolq.worker.chunks.sections import chunk_documents
from poolq.worker.parse.layout import text_and_layout
from poolq.worker.parse.readers import read_document
from tests.models import minilm_path
from tests.parse.made_files import docx_file, pptx_file

TOK = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
CHUNKER = Chunker([TokenCounter(TOK, 64)], overlap_tokens=8)
TOK.no_padding()
TOK.no_truncation()
HEADER = "Model | Torque | Service interval"
ROWS = [f"HC-{n} | {10 + n} Nm | every {100 * n} hours" for n in range(1, 41)]
MARKDOWN = (
    "# Cranes\n\nThe torque table of every crane model we service in the harbour.\n\n"
    "| Model | Torque | Service interval |\n|---|---|---|\n"
    + "".join(f"| {r.replace(' | ', ' | ')} |\n" for r in ROWS)
    + "\nAfter the table, a closing paragraph about the cranes.\n"
)


def chunks_of(data: bytes, name: str) -> tuple[Document, list]:
    parsed = read_document(data, name)
    text, layout = text_and_layout(parsed, source=name)
    doc = Document("d", text, {}, layout)
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [doc])
    return doc, chunks


def test_every_chunk_of_a_markdown_table_starts_with_its_header_row():
    doc, chunks = chunks_of(MARKDOWN.encode(), "cranes.md")
    parsed = read_document(MARKDOWN.encode(), "cranes.md")
    assert {b.header for b in parsed.blocks if b.kind == "table"} == {HEADER}
    table = [c for c in chunks if "HC-" in c.text]
    assert len(table) > 3  # the table needs several chunks at 64 tokens
    assert all(c.text.split("\n\n")[0] == HEADER or c.index == table[0].index for c in table)
    assert table[0].text.startswith(HEADER) or HEADER in table[0].text.split("\n\n")[:3]
    seen = [r for c in table for r in c.text.split("\n\n") if r.startswith("HC-")]
    assert seen == ROWS  # every row once, whole, in order: no overlap inside a table
    for c in table:  # the span is the rows' own text in the document
        assert doc.text[c.start : c.end] in c.text
    assert all(len(TOK.encode(c.text).ids) <= 64 for c in table)  # special tokens included
    assert not any("HC-" in c.text for c in chunks if "closing paragraph" in c.text)


def test_docx_and_pptx_tables_take_their_first_row_as_the_header():
    rows = [["Room", "Seats"], *[[f"Room {n}", f"{n * 3} seats"] for n in range(1, 40)]]
    for data, name in [
        (docx_file([("Heading 1", "Rooms"), rows]), "rooms.docx"),
        (pptx_file([("Rooms", ["The rooms of the new office."])], tables={1: rows}), "r.pptx"),
    ]:
        _, chunks = chunks_of(data, name)
        table = [c for c in chunks if "seats" in c.text]
        assert len(table) > 1
        assert all(c.text.startswith("Room | Seats") for c in table[1:])


def test_a_row_wider_than_a_chunk_is_cut_between_cells():
    cells = [f"cell {n} " + "word " * 12 for n in range(8)]
    md = "| " + " | ".join(f"H{n}" for n in range(8)) + " |\n|" + "---|" * 8 + "\n"
    md += "| " + " | ".join(c.strip() for c in cells) + " |\n"
    _, chunks = chunks_of(md.encode(), "wide.md")
    pieces = [c for c in chunks if "cell" in c.text]
    assert len(pieces) > 1
    header = " | ".join(f"H{n}" for n in range(8))
    for c in pieces:
        body = c.text.split("\n\n", 1)[1] if c.text.startswith(header + "\n\n") else c.text
        assert c.text.startswith(header)
        for cell in body.split(" | "):  # whole cells only
            assert cell.strip() in [x.strip() for x in cells]


def test_poolq_parse_shows_the_header_on_each_table_block(tmp_path):
    import json

    from tests.cli_process import poolq

    f = tmp_path / "cranes.md"
    f.write_text(MARKDOWN)
    shown = poolq("parse", str(f))
    assert shown.returncode == 0, shown.stderr
    blocks = shown.stdout.split("\n\n[")[1:]
    table = [b for b in blocks if b.split("]", 1)[1].lstrip().startswith("table")]
    assert len(table) == len(ROWS) + 1
    assert all(f"    header: {HEADER}" in b for b in table)
    out = json.loads(poolq("parse", str(f), "--json").stdout)
    assert {b.get("header") for b in out["blocks"] if b["kind"] == "table"} == {HEADER}
    assert all("header" not in b for b in out["blocks"] if b["kind"] != "table")
