"""The parse stage: files as people have them (PDF, HTML, DOCX, PPTX, EPUB, Markdown, text) read
into typed blocks that keep their page and heading path (``blocks.py``).

``sniff.py`` names a file's type from its bytes; ``formats/`` holds one reader per type, chosen
through ``readers.py``; ``sandbox.py`` runs readers in child processes with a time limit and a
memory cap, so that a hostile file costs only its own document; ``layout.py`` turns a parsed
document into the text and layout an ingest job carries. Nothing here imports torch, the
engine or the store: ``poolq worker --role parse`` runs this stage alone.
"""
