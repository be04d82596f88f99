"""What an ingest job hands the engines: each chunk's text as the models read it (a parsed
file's with its title and headings before it) and the chunker's tokens of exactly that text,
so that no engine tokenizes it again (``chunks/context.py``, ``pipeline.ingest_documents``)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from tokenizers import Tokenizer

from poolq.wire.documents import Document
from poolq.worker.chunks.chunking import Chunker, TokenCounter
from poolq.worker.chunks.context import CONTEXT_TOKENS
from poolq.worker.parse.blocks import Block, ParsedDocument
from poolq.worker.parse.layout import text_and_layout
from poolq.worker.runtime import pipeline
from poolq.worker.runtime.vectorizer import Encoded
from tests.models import minilm_path

TOK = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
TOK.no_truncation()
TOK.no_padding()


def runtime(sent: list[tuple[str, object]]) -> SimpleNamespace:
    chunker = Chunker([TokenCounter(TOK, 64)], overlap_tokens=8)

    async def encode(texts, ids, *, encodings=None, on_queued=None, **kwargs):
        on_queued()
        sent.extend(zip(texts, encodings or [None] * len(texts), strict=True))
        return [Encoded({}) for _ in texts]

    async def write(collection, points, *, replace_docs):
        return len(points)

    return SimpleNamespace(
        vectorizer=SimpleNamespace(
            chunker=chunker,
            chunk_many=chunker.chunk_many,
            chunk_parsed_many=chunker.narrower(CONTEXT_TOKENS).chunk_many,
            encode=encode,
            model_ids=lambda: {},
            version="v",
            label_readers={},
        ),
        writer=SimpleNamespace(batch_points=16, write=write),
        redis=None,
    )


def parsed(doc_id: str, title: str | None, sections: list[tuple[tuple[str, ...], str]]) -> Document:
    blocks = []
    for headings, body in sections:
        blocks += [Block(headings[-1], None, headings, "heading")] if headings else []
        blocks.append(Block(body, None, headings))
    text, layout = text_and_layout(ParsedDocument("text/html", title, blocks), source=doc_id)
    return Document(doc_id, text, {}, layout)


def test_every_chunk_reaches_the_engines_with_the_tokens_of_what_they_encode():
    body = " ".join(f"The pump's seal number {i} is checked yearly." for i in range(40))
    docs = [
        parsed("manual.html", "Pump manual", [(("Pump manual", "Installing"), body),
                                              (("Pump manual", "Servicing"), "Tighten to 40 Nm.")]),
        parsed("notes.txt", None, [((), body)]),  # a plain text file: no context
        Document("sent-as-text", body),
    ]  # fmt: skip
    sent: list[tuple[str, object]] = []
    out = asyncio.run(pipeline.ingest_documents(runtime(sent), "c", docs, group="g"))
    assert out.documents == 3 and len(sent) == out.chunks > 6
    assert any(t == "Pump manual › Servicing\n\nServicing\n\nTighten to 40 Nm." for t, _ in sent)
    for text, tokens in sent:
        assert tokens is not None, text
        (ids,) = tokens  # one model
        ids = ids.ids if hasattr(ids, "ids") else ids
        assert ids == TOK.encode(text, add_special_tokens=False).ids, text
