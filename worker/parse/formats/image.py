"""Image files as pages: PNG, JPEG and TIFF (one page a frame), sniffed from their bytes.

An image has no text layer: every page comes back unread (``ParsedDocument.unread``) for the
OCR pass (``ocr_pass.py``), and a worker without OCR, or with it off, says ``no_text``. Only
the header is read here (frames, size): an empty or unreadable file is ``corrupt``, and an
image too large to decode ``too_large`` (``page_images.py``).
"""

from __future__ import annotations

from poolq.wire.sniff import sniff
from poolq.worker.parse.blocks import ParsedDocument
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.page_images import image_frames


def read_image(data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``data`` (a PNG, JPEG or TIFF file) as pages to OCR, 1-based, with no blocks."""
    mime = sniff(data, "image.tiff")
    pages = image_frames(data)
    return ParsedDocument(mime, None, [], pages, tuple((p, ()) for p in range(1, pages + 1)))
