"""The bounds one file's parse runs under, and which of its pages OCR reads (flags of ``poolq
worker`` and ``poolq parse``)."""

from __future__ import annotations

from dataclasses import dataclass

from poolq.wire import constants

DEFAULT_MAX_FILE_BYTES = constants.MAX_FILE_BYTES  # a file as sent (the client refuses first)
DEFAULT_MAX_INFLATED_BYTES = 256 << 20  # a zip's members, decompressed, all together
DEFAULT_PARSE_TIMEOUT_S = 120.0
DEFAULT_PARSE_MEMORY_MB = 1024  # address space of one parse child above its start
DEFAULT_OCR = "auto"  # which pages OCR reads (ocr_pass.py): auto, never or always


@dataclass(frozen=True)
class ParseLimits:
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES
    timeout_s: float = DEFAULT_PARSE_TIMEOUT_S
    memory_mb: int = DEFAULT_PARSE_MEMORY_MB
    ocr: str = DEFAULT_OCR  # a page's OCR has the same time (timeout_s) and memory caps
