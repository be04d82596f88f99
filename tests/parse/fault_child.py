"""A parse child whose reader misbehaves on marked files, for the sandbox's tests: the process,
its pipes, its memory cap and its death are the real ones (``poolq.worker.parse.child``); only
the reader is swapped for one that crashes the process (``CRASH``), hangs (``HANG``) or
allocates without bound (``BLOWUP``) when a file starts with the marker, and reads any other
file with the real reader; the OCR of the pages listed in ``FAULT_HANG_OCR_PAGES`` (1-based,
comma-separated) hangs. Run as ``python -m tests.parse.fault_child MEMORY_MB``."""

from __future__ import annotations

import os
import signal
import sys
import time

from poolq.worker.parse import child


def faulty_read(data: bytes, name: str = "", limits=None):
    if data.startswith(b"CRASH"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if data.startswith(b"HANG"):
        while True:
            time.sleep(1)
    if data.startswith(b"BLOWUP"):
        hog = []
        while True:
            hog.append(bytearray(64 << 20))
    return real_read(data, name, limits)


def faulty_ocr(data, mime, work, limits):
    if str(work[0]) in os.environ.get("FAULT_HANG_OCR_PAGES", "").split(","):
        while True:
            time.sleep(1)
    return real_ocr(data, mime, work, limits)


real_read = child.read_layer
child.read_layer = faulty_read
real_ocr = child.ocr_page
child.ocr_page = faulty_ocr

if __name__ == "__main__":
    sys.exit(child.main(sys.argv))
