"""The OCR engine: Tesseract 5 through tesserocr, in the process that calls it (a parse child).

Chosen by measurement on typeset English manuals (docs/parse-libraries.md: Tesseract through
tesserocr reads a 300 dpi page in about 1 CPU second at about 1% character error rate, RapidOCR
on ONNX Runtime in about 6 at 7% with 1.3 GB of memory). The ``ocr`` extra brings tesserocr
(MIT; its wheel carries libtesseract, Apache-2.0); the language data is Debian's
``tesseract-ocr-eng`` (``make install`` installs it where apt-get can), found in
``TESSDATA_PREFIX`` or the usual folders. Nothing is downloaded.

:func:`recognize` returns a page image's paragraphs. Tesseract reads noise as runs of short
low-confidence "words": a paragraph is kept only when its mean word confidence reaches
:data:`MIN_CONFIDENCE` and it holds a word of two letters or more, so a page of noise gives no
text (``no_text``) rather than garbage. Tesseract's own deadline bounds a page (a page past it
is ``parse_timeout``, and the child lives); the parent's kill stays the hard bound.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path
from typing import Any

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError

LANGUAGE = "eng"
MIN_CONFIDENCE = 50.0  # mean word confidence (0-100) a paragraph needs to be kept
_WORD = re.compile(r"[^\W\d_]{2,}")
# where Debian, Ubuntu, Fedora and a source build put the language data
TESSDATA_FOLDERS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
)
EXTRA_HINT = "pip install 'poolq[ocr]' and Debian's tesseract-ocr-eng"


def tessdata() -> str | None:
    """The folder holding ``eng.traineddata``, or None."""
    prefix = os.environ.get("TESSDATA_PREFIX")  # Tesseract's own variable
    for folder in (
        *([prefix, str(Path(prefix) / "tessdata")] if prefix else []),
        *TESSDATA_FOLDERS,
    ):
        if (Path(folder) / f"{LANGUAGE}.traineddata").is_file():
            return folder
    return None


def missing() -> str | None:
    """Why this machine cannot OCR (what to install), or None when it can. Cheap: nothing is
    imported or loaded."""
    if importlib.util.find_spec("tesserocr") is None:
        return f"OCR is not installed on this worker ({EXTRA_HINT})"
    if tessdata() is None:
        return (
            f"OCR has no {LANGUAGE} language data on this worker (apt-get install "
            "tesseract-ocr-eng, or set TESSDATA_PREFIX)"
        )
    return None


@functools.cache
def _api() -> Any:
    """One Tesseract instance for the process (its model loads once: about 0.2 s)."""
    import tesserocr

    return tesserocr.PyTessBaseAPI(path=tessdata() or "", lang=LANGUAGE)


def recognize(image: Any, timeout_s: float) -> list[str]:
    """The paragraphs Tesseract reads on ``image`` (a PIL image), in reading order, each with
    its lines joined by ``\\n``; :class:`ParseError` ``PARSE_TIMEOUT`` past ``timeout_s``."""
    import tesserocr

    api = _api()
    api.SetImage(image)
    if not api.Recognize(timeout=max(1, int(timeout_s * 1000))):
        api.Clear()
        raise ParseError(
            ErrorCode.PARSE_TIMEOUT, f"OCR took longer than the limit of {timeout_s:g}s a page"
        )
    out: list[str] = []
    level = tesserocr.RIL.PARA
    iterator = api.GetIterator()
    if iterator is not None:
        for item in tesserocr.iterate_level(iterator, level):
            try:
                text = (item.GetUTF8Text(level) or "").strip()
            except RuntimeError:  # "No text returned": an empty region
                continue
            if text and _WORD.search(text) and item.Confidence(level) >= MIN_CONFIDENCE:
                out.append(text)
    api.Clear()
    return out
