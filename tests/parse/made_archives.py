"""Zip-based files made at test time: EPUBs and zip bombs (``made_files`` re-exports them).

- :func:`epub_file`: a minimal valid EPUB 3 (container, OPF, navigation document, chapters)
- :func:`zip_bomb`: a small DOCX-looking zip whose member inflates past a limit, or lies
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from functools import lru_cache

_CONTAINER = """<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles>
    <rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>"""

_XHTML = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
<head><title>{title}</title><style>p {{ margin: 0 }}</style></head>
<body>{body}</body>
</html>"""


def epub_file(
    chapters: list[tuple[str, str]],
    *,
    title: str = "A Made Book",
    nav_in_spine: bool = False,
    ncx: bool = False,
) -> bytes:
    """A minimal valid EPUB 3: ``chapters`` are ``(toc title, body markup)`` in reading order,
    each an XHTML file in the spine and an entry of the navigation document (``nav.xhtml``,
    in the manifest, and first in the spine with ``nav_in_spine``, as many books have it).
    ``ncx``: an EPUB 2 table of contents (``toc.ncx``, named by the spine) in place of the
    navigation document. ``title``: the OPF's ``dc:title``."""
    from xml.sax.saxutils import escape

    files = [(f"chapter{i}.xhtml", t, b) for i, (t, b) in enumerate(chapters, start=1)]
    manifest = "\n".join(
        f'<item id="c{i}" href="{name}" media-type="application/xhtml+xml"/>'
        for i, (name, _, _) in enumerate(files, start=1)
    )
    spine = "\n".join(f'<itemref idref="c{i}"/>' for i in range(1, len(files) + 1))
    if nav_in_spine:
        spine = '<itemref idref="nav"/>\n' + spine
    if ncx:
        toc_item = '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
    else:
        toc_item = (
            '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        )
    opf = f"""<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="uid">urn:uuid:00000000-0000-0000-0000-000000000000</dc:identifier>
    <dc:title>{escape(title)}</dc:title>
    <dc:language>en</dc:language>
    <meta property="dcterms:modified">2024-01-01T00:00:00Z</meta>
  </metadata>
  <manifest>
    {toc_item}
    {manifest}
  </manifest>
  <spine{' toc="ncx"' if ncx else ""}>
    {spine}
  </spine>
</package>"""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # stored, first
        z.writestr("META-INF/container.xml", _CONTAINER)
        z.writestr("OEBPS/content.opf", opf)
        if ncx:
            z.writestr("OEBPS/toc.ncx", _ncx(files))
        else:
            toc = "".join(f'<li><a href="{n}">{escape(t)}</a></li>' for n, t, _ in files)
            body = f'<nav epub:type="toc"><ol>{toc}</ol></nav>'
            z.writestr("OEBPS/nav.xhtml", _XHTML.format(title="Contents", body=body))
        for name, chapter_title, body in files:
            z.writestr(f"OEBPS/{name}", _XHTML.format(title=escape(chapter_title), body=body))
    return buf.getvalue()


def _ncx(files: list[tuple[str, str, str]]) -> str:
    from xml.sax.saxutils import escape

    points = "".join(
        f'<navPoint id="p{i}" playOrder="{i}"><navLabel><text>{escape(t)}</text></navLabel>'
        f'<content src="{name}"/></navPoint>'
        for i, (name, t, _) in enumerate(files, start=1)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
        f"<head/><docTitle><text>Book</text></docTitle><navMap>{points}</navMap></ncx>"
    )


def _deflated_zeros(size: int) -> tuple[bytes, int]:
    """A raw deflate stream of ``size`` zero bytes and its CRC-32. Each MiB is deflated once and
    repeated: a full flush makes a block independent of what came before it."""
    mib = 1 << 20

    def block(n: int) -> bytes:
        comp = zlib.compressobj(9, zlib.DEFLATED, -15)
        return comp.compress(bytes(n)) + comp.flush(zlib.Z_FULL_FLUSH)

    whole, rest = divmod(size, mib)
    crc = 0
    for _ in range(whole):
        crc = zlib.crc32(bytes(mib), crc)
    crc = zlib.crc32(bytes(rest), crc)
    stream = block(mib) * whole + (block(rest) if rest else b"")
    return stream + b"\x03\x00", crc  # an empty final block ends the stream


def _raw_zip(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip from ``(name, deflated data, crc, declared size, method)`` members, written by hand
    so that a declared size can lie."""
    local, central = io.BytesIO(), io.BytesIO()
    for name, data, crc, size, method in members:
        raw = name.encode()
        offset = local.tell()
        local.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc,
                                len(data), size, len(raw), 0))  # fmt: skip
        local.write(raw + data)
        central.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21,
                                  crc, len(data), size, len(raw), 0, 0, 0, 0, 0, offset))  # fmt: skip
        central.write(raw)
    cd = central.getvalue()
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(cd),
                      local.tell(), 0)  # fmt: skip
    return local.getvalue() + cd + end


@lru_cache(maxsize=8)
def zip_bomb(inflated_bytes: int = 300 << 20, *, declared_bytes: int | None = None) -> bytes:
    """A DOCX-looking zip (``[Content_Types].xml`` and ``word/document.xml``) whose document
    member is ``inflated_bytes`` of zeros, deflated to about a thousandth of that. The default
    passes the default inflated limit (256 MiB). ``declared_bytes``: the size the zip's headers
    claim for it (a lie when it differs from ``inflated_bytes``); the truth by default."""
    types = b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    types_z = comp.compress(types) + comp.flush()
    bomb, crc = _deflated_zeros(inflated_bytes)
    declared = inflated_bytes if declared_bytes is None else declared_bytes
    return _raw_zip(
        [
            ("[Content_Types].xml", types_z, zlib.crc32(types), len(types), zipfile.ZIP_DEFLATED),
            ("word/document.xml", bomb, crc, declared, zipfile.ZIP_DEFLATED),
        ]
    )
