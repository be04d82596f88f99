"""The bounds one file's parse runs under, and which of its pages OCR reads (flags of ``poolq
worker`` and ``poolq parse``)."""

from __future__ import annotations

from dataclasses import dataclass

from poolq.wire import constants

DEFAULT_MAX_INFLATED_BYTES = 256 << 20  # a zip's members, decompressed, all together


@dataclass(frozen=True)
class ParseLimits:
    max_file_bytes: int = constants.MAX_FILE_BYTES  # a file as sent (the client refuses first)
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES
    timeout_s: float = constants.PARSE_TIMEOUT_S
    memory_mb: int = constants.PARSE_MEMORY_MB
    # which pages OCR reads (ocr_pass.py: auto, never or always); a page's OCR has the same
    # time (timeout_s) and memory caps as a file's parse
    ocr: str = constants.OCR
