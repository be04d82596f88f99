"""A page as an image for OCR: a PDF page rendered by pypdfium2, or a frame of an image file
(PNG, JPEG, TIFF: one page a frame), bounded before anything large is decoded.

- A PDF page is rendered in grey at :data:`RENDER_DPI`, or smaller when that would pass
  :data:`MAX_RENDER_PIXELS` (a poster-sized page). An image drawn on it from more than
  :data:`MAX_IMAGE_PIXELS` pixels is ``too_large`` before rendering (pdfium would decode it
  whole).
- An image file's frame of more than :data:`MAX_IMAGE_PIXELS` pixels is ``too_large`` from its
  header, before decoding (a 20,000 × 20,000 PNG of a few kB is a decompression bomb); a
  frame larger than a 400 dpi A4 page is scaled down to that for OCR. An image Pillow cannot
  open or decode is ``corrupt``.
"""

from __future__ import annotations

import io
import math
from typing import Any

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.clean import one_line
from poolq.worker.parse.errors import ParseError

RENDER_DPI = 300  # Tesseract's own sweet spot: measured 0.7% CER at 300 dpi, 1.3% at 200
MAX_RENDER_PIXELS = 40_000_000  # a rendered page: A3 at 300 dpi is 17.4 M
MAX_IMAGE_PIXELS = 100_000_000  # one picture to decode (a 10,000 × 10,000 scan)
OCR_PIXELS = 15_500_000  # A4 at 400 dpi: larger frames are scaled down to this for OCR
MAX_FRAMES = 10_000  # frames of a TIFF read as pages


def _too_large(what: str, w: int, h: int) -> ParseError:
    return ParseError(
        ErrorCode.TOO_LARGE,
        f"{what} of {w} × {h} px ({w * h / 1e6:.0f} MP), over the OCR limit of "
        f"{MAX_IMAGE_PIXELS / 1e6:.0f} MP",
    )


def pdf_page_image(data: bytes, page: int) -> Any:
    """Page ``page`` (1-based) of the PDF ``data`` as a grey PIL image."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    pdf = pdfium.PdfDocument(data)
    try:
        p = pdf[page - 1]
        try:
            for obj in p.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=4):
                w, h = obj.get_px_size()
                if w * h > MAX_IMAGE_PIXELS:
                    raise _too_large("it holds an image", w, h)
            width_pt, height_pt = p.get_size()
            scale = RENDER_DPI / 72
            pixels = width_pt * height_pt * scale * scale
            if pixels > MAX_RENDER_PIXELS:
                scale *= math.sqrt(MAX_RENDER_PIXELS / pixels)
            return p.render(scale=scale, grayscale=True).to_pil()
        finally:
            p.close()
    except pdfium.PdfiumError as e:
        raise ParseError(ErrorCode.CORRUPT, f"the page does not load ({one_line(str(e))})") from e
    finally:
        pdf.close()


def open_image(data: bytes) -> Any:
    """``data`` opened by Pillow (nothing decoded yet), else ``corrupt``."""
    from PIL import Image, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = None  # bounded here, by MAX_IMAGE_PIXELS, before decoding
    if not data:
        raise ParseError(ErrorCode.CORRUPT, "an empty file (0 bytes): no image in it")
    try:
        return Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as e:
        raise ParseError(ErrorCode.CORRUPT, f"not a readable image ({one_line(str(e))})") from e


def image_frames(data: bytes) -> int:
    """How many pages (frames) the image file ``data`` holds."""
    img = open_image(data)
    frames = max(1, min(MAX_FRAMES, int(getattr(img, "n_frames", 1) or 1)))
    w, h = img.size
    if frames == 1 and w * h > MAX_IMAGE_PIXELS:  # (a frame of a TIFF: that page's error)
        raise _too_large("an image", w, h)
    return frames


def image_page(data: bytes, page: int) -> Any:
    """Frame ``page`` (1-based) of the image file ``data``, grey, at most :data:`OCR_PIXELS`."""
    from PIL import Image, ImageOps

    img = open_image(data)
    try:
        img.seek(page - 1)
        w, h = img.size
        if w * h > MAX_IMAGE_PIXELS:
            raise _too_large("an image", w, h)
        if w * h > OCR_PIXELS:  # JPEG: decode at a fraction of the size (cheap)
            img.draft("L", (int(w * math.sqrt(OCR_PIXELS / (w * h))) + 1, h))
        img.load()
        grey = ImageOps.exif_transpose(img).convert("L")
    except ParseError:
        raise
    except (OSError, ValueError, EOFError, SyntaxError) as e:
        raise ParseError(ErrorCode.CORRUPT, f"not a readable image ({one_line(str(e))})") from e
    w, h = grey.size
    if w * h > OCR_PIXELS:
        f = math.sqrt(OCR_PIXELS / (w * h))
        grey = grey.resize((max(1, int(w * f)), max(1, int(h * f))), Image.Resampling.LANCZOS)
    return grey
