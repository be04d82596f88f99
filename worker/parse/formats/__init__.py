"""One reader per document type: ``read_X(data: bytes, limits: ParseLimits) -> ParsedDocument``.

``readers.READERS`` maps a sniffed MIME type to its reader here; each module imports its
library (pypdfium2, selectolax, python-docx, python-pptx, lxml, markdown-it-py) on its own, so
a type's library loads only when a file of that type arrives. A reader returns clean blocks
(no markup, entities, CSS or JavaScript), raises ``ParseError`` for a file it cannot read
(``CORRUPT`` for whatever its library rejects, with a one-line message) and lets
``MemoryError`` through to the sandbox. ``html_boilerplate.py`` holds the HTML reader's rules
for what of a page is not content.
"""
