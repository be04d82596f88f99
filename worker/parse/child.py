"""A parse child process: reads files from its parent, one at a time, and answers with the
parsed document or the file's error. ``python -m poolq.worker.parse.child MEMORY_MB``.

Frames on stdin/stdout are a 4-byte big-endian length and a msgpack map:

    read:     {"name": str, "data": bytes, "limits": {ParseLimits fields}}
              -> {"ok": ParsedDocument.to_wire()}  (its text layer; unread pages listed)
    OCR:      {"ocr": [page, [heading, ...]], "mime": str, "data": bytes (or none: the file
              of this child's last request), "limits": {...}}
              -> {"ok": {"blocks": [[text, page, headings, kind, header], ...]}}
    either:   -> {"error": {"code": str, "message": str}}

The child caps its own address space at start (``RLIMIT_AS``: what it maps now plus
``MEMORY_MB``), so a file that would blow up memory fails here with ``MemoryError``, which is
answered as ``too_large``; whatever else goes wrong inside a reader is ``corrupt``. A hang or a
crash is the parent's to see (``sandbox.py``). Nothing here imports torch or the engine.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
from typing import Any, BinaryIO

import msgpack

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.blocks import ParsedDocument
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.ocr_pass import ocr_page
from poolq.worker.parse.readers import read_layer

HEADER = struct.Struct(">I")


def read_frame(f: BinaryIO) -> Any:
    head = f.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (n,) = HEADER.unpack(head)
    body = f.read(n)
    if len(body) < n:
        return None
    return msgpack.unpackb(body, raw=False)


def write_frame(f: BinaryIO, obj: Any) -> None:
    body = msgpack.packb(obj, use_bin_type=True)
    f.write(HEADER.pack(len(body)) + body)
    f.flush()


def cap_memory(memory_mb: int) -> None:
    """Limit this process's address space to what it maps now plus ``memory_mb``."""
    import resource

    try:
        with open("/proc/self/status") as status:
            size_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return  # not Linux: no cap
    limit = size_kb * 1024 + memory_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


_last_file: list[bytes] = [b""]  # the file of the last request: an OCR request may omit it


def answer(request: dict[str, Any]) -> dict[str, Any]:
    limits = ParseLimits(**request.get("limits", {}))
    data = request.get("data")
    if data is None:
        data = _last_file[0]
    else:
        _last_file[0] = data
    try:
        if "ocr" in request:
            page, headings = request["ocr"]
            blocks = ocr_page(data, request["mime"], (page, tuple(headings)), limits)
            wire = ParsedDocument(request["mime"], None, blocks).to_wire()
            return {"ok": {"blocks": wire["blocks"]}}
        doc = read_layer(data, request.get("name", ""), limits)
        return {"ok": doc.to_wire()}
    except ParseError as e:
        return {"error": {"code": e.code.value, "message": e.message}}
    except MemoryError:
        message = f"needs more than {limits.memory_mb} MB of memory to parse"
        return {"error": {"code": ErrorCode.TOO_LARGE.value, "message": message}}
    except RecursionError:
        return {"error": {"code": ErrorCode.CORRUPT.value, "message": "nested too deeply to read"}}
    except Exception as e:  # a reader's bug or a library's refusal: this file only
        message = f"unreadable ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
        return {"error": {"code": ErrorCode.CORRUPT.value, "message": message}}


def main(argv: list[str]) -> int:
    memory_mb = int(argv[1]) if len(argv) > 1 else ParseLimits().memory_mb
    # warm the readers that most files need before the cap: their libraries load once
    for module in ("formats.pdf", "formats.html", "page_images"):
        with contextlib.suppress(ImportError):
            __import__(f"poolq.worker.parse.{module}")
    with contextlib.suppress(ImportError):  # the OCR engine's library (its model loads on use)
        __import__("tesserocr")
    cap_memory(memory_mb)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a library that prints must not corrupt the frames
    while (request := read_frame(stdin)) is not None:
        write_frame(stdout, answer(request))
        del request
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main(sys.argv))
