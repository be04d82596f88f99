"""``poolq parse FILE``: what the parse stage would index from one file, without Redis, models
or a store: its type, title and pages, then each block with its page and heading path. The file
is read in a parse child process, as a worker reads it (the same time and memory bounds), so a
file that hangs or crashes the parser is reported as it would be in a job. A bad file prints
its error code and message and exits 1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer

from poolq.worker.cli.app import app
from poolq.worker.cli.options import fail, json_option

JSON_SHAPE = (
    '{"file", "mime", "title", "pages", "ocr_pages": [page, ...], "page_errors": [{"page", '
    '"code", "message"}], "blocks": [{"text", "page", "headings", "kind", "header"?}]} '
    '("header": a table row\'s header row), or {"file", "error": {"code", "message"}} for a '
    "file that cannot be read (exit 1)."
)


async def _parse(
    path: Path, timeout_s: float, memory_mb: int, max_file_bytes: int, ocr: str
) -> Any:
    from poolq.worker.parse.limits import ParseLimits
    from poolq.worker.parse.sandbox import ParsePool

    limits = ParseLimits(
        max_file_bytes=max_file_bytes, timeout_s=timeout_s, memory_mb=memory_mb, ocr=ocr
    )
    pool = ParsePool(1, limits)
    try:
        return await pool.parse(path.read_bytes(), path.name)
    finally:
        await pool.close()


@app.command("parse")
def parse_file(
    file: Path = typer.Argument(..., help="The file to read (any type: sniffed from its bytes)."),
    as_json: bool = json_option(JSON_SHAPE),
    timeout_s: float = typer.Option(120.0, "--parse-timeout", min=0.1, help="Seconds allowed."),
    memory_mb: int = typer.Option(1024, "--parse-memory", min=64, help="MB allowed."),
    max_file_bytes: int = typer.Option(
        32 << 20, "--max-file-bytes", min=1, help="Refuse larger files (too_large)."
    ),
    ocr: str = typer.Option(
        "auto",
        "--ocr",
        help="Which pages OCR reads: auto (those without a usable text layer, "
        "and images), always or never (as the worker's --ocr).",
    ),
) -> None:
    """Show what a file would be indexed as: type, title, blocks with pages and headings."""
    from poolq.wire.records.codes import ErrorCode
    from poolq.worker.parse.errors import ParseError
    from poolq.worker.parse.ocr_engine import missing
    from poolq.worker.parse.ocr_pass import check_mode

    if not file.is_file():
        fail("parse", f"{str(file)!r} is not a file")
    try:
        check_mode(ocr)
    except ValueError as exc:
        fail("parse", f"--ocr: {str(exc).removeprefix('ocr: ')}")
    if ocr == "always" and (why := missing()) is not None:
        fail("parse", f"--ocr always, but {why}")
    size = file.stat().st_size
    try:
        if size > max_file_bytes:
            raise ParseError(
                ErrorCode.TOO_LARGE,
                f"{size} bytes, over the limit of {max_file_bytes} bytes per file",
            )
        doc = asyncio.run(_parse(file, timeout_s, memory_mb, max_file_bytes, ocr))
    except ParseError as e:
        if as_json:
            err = {"code": e.code.value, "message": e.message}
            print(json.dumps({"file": str(file), "error": err}, ensure_ascii=False))
        else:
            typer.echo(f"poolq parse: {file}: {e.code.value}: {e.message}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        blocks = [
            {"text": b.text, "page": b.page, "headings": list(b.headings), "kind": b.kind}
            | ({"header": b.header} if b.header is not None else {})
            for b in doc.blocks
        ]
        out = {"file": str(file), "mime": doc.mime, "title": doc.title, "pages": doc.pages}
        out |= {"ocr_pages": list(doc.ocr_pages), "page_errors": [
            {"page": p, "code": c, "message": m} for p, c, m in doc.page_errors
        ]}  # fmt: skip
        print(json.dumps(out | {"blocks": blocks}, ensure_ascii=False))
        return
    print(f"file:   {file}\ntype:   {doc.mime}\ntitle:  {doc.title or '-'}")
    if doc.pages is not None:
        print(f"pages:  {doc.pages}")
    if doc.ocr_pages:
        print(f"OCR:    pages {', '.join(map(str, doc.ocr_pages))}")
    for p, c, m in doc.page_errors:
        print(f"page {p}: {c}: {m}")
    print(f"blocks: {len(doc.blocks)}")
    for i, b in enumerate(doc.blocks, 1):
        where = " › ".join(b.headings) or "-"
        page = f"p.{b.page}" if b.page is not None else ""
        text = " ".join(b.text.split())
        ocr = " (OCR)" if b.page is not None and b.page in doc.ocr_pages else ""
        print(f"\n[{i}] {b.kind} {page}{ocr} {where}".rstrip())
        if b.header is not None:
            print(f"    header: {' '.join(b.header.split())[:300]}")
        print(f"    {text[:300]}{'…' if len(text) > 300 else ''}")
