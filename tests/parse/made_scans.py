"""Scans made at test time: real text pages typeset by reportlab (``made_files.pdf_pages``),
rendered to images by pypdfium2, then written back as image-only PDFs or image files, so a
test knows every word a scan holds. And the hostile inputs OCR must survive.

- :func:`rendered_page`: a page of text lines as a grey PIL image at ``dpi``
- :func:`mixed_pdf`: typed pages (a text layer) and scanned pages (one image each, no text)
- :func:`image_file`: a rendered page as PNG, JPEG or TIFF bytes (TIFF: one frame a page)
- :func:`huge_png`: a 20,000 × 20,000 px PNG of a few kB (a decompression bomb)
- :func:`huge_image_pdf`: a PDF page that is one 20,000 × 20,000 px image
- :func:`noise_png`: a page-sized image of random noise
"""

from __future__ import annotations

import io
import random
import zlib
from typing import Any

from tests.parse.made_files import pdf_pages

A4_PT = (595.27, 841.89)


def rendered_page(lines: list[str], dpi: int = 200, font_size: float = 11.0) -> Any:
    """``lines`` typeset on an A4 page (``pdf_pages``), rendered grey at ``dpi``."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(pdf_pages([lines], font_size=font_size))
    try:
        return pdf[0].render(scale=dpi / 72, grayscale=True).to_pil()
    finally:
        pdf.close()


def mixed_pdf(pages: list[tuple[str, list[str]]], dpi: int = 200) -> bytes:
    """A PDF of ``("typed" | "scanned", lines)`` pages: a typed page has its text layer, a
    scanned one is only the page's image (``rendered_page``), drawn over the whole page."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    from tests.parse.made_files import LEADING, PAGE_TOP, _register_font

    _register_font()
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4_PT, invariant=True)
    for kind, lines in pages:
        if kind == "scanned":
            c.drawImage(ImageReader(rendered_page(lines, dpi)), 0, 0, *A4_PT)
        else:
            y = PAGE_TOP
            for line in lines:
                c.setFont("Vera", 11)
                c.drawString(72, y, line)
                y -= LEADING
        c.showPage()
    c.save()
    return buf.getvalue()


def image_file(pages: list[list[str]], fmt: str = "PNG", dpi: int = 200) -> bytes:
    """Each of ``pages`` rendered, written as one image file (a TIFF holds every page)."""
    images = [rendered_page(lines, dpi) for lines in pages]
    buf = io.BytesIO()
    more = {"save_all": True, "append_images": images[1:]} if len(images) > 1 else {}
    images[0].save(buf, fmt, dpi=(dpi, dpi), **more)
    return buf.getvalue()


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return len(body).to_bytes(4, "big") + kind + body + crc.to_bytes(4, "big")


def huge_png(side: int = 20_000) -> bytes:
    """A ``side`` × ``side`` 1-bit white PNG, written row by row (a few kB compressed)."""
    row = b"\x00" + b"\xff" * ((side + 7) // 8)
    z = zlib.compressobj(9)
    data = b"".join(z.compress(row) for _ in range(side)) + z.flush()
    ihdr = side.to_bytes(4, "big") * 2 + bytes([1, 0, 0, 0, 0])  # 1 bit, grey
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", data)
        + _png_chunk(b"IEND", b"")
    )


def huge_image_pdf(side: int = 20_000) -> bytes:
    """A one-page PDF whose page is one ``side`` × ``side`` 1-bit image (Flate, a few kB)."""
    stream = zlib.compress(b"\xff" * ((side + 7) // 8) * side, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
        b"/Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
        b"/BitsPerComponent 1 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream"
        % (side, side, len(stream), stream),
    ]
    content = b"q 595 0 0 842 0 0 cm /Im0 Do Q"
    objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def noise_png(width: int = 1654, height: int = 2339, seed: int = 7) -> bytes:
    """A page-sized (A4 at 200 dpi) grey image of random noise: no text in it."""
    from PIL import Image

    rnd = random.Random(seed)
    img = Image.frombytes("L", (width, height), rnd.randbytes(width * height))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()
