"""Where documents come from: a JSONL file or a folder of .txt/.md files (id = relative path).

Application code can implement :class:`Source` for its own stores.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

TEXT_SUFFIXES = (".txt", ".md")


class Source(Protocol):
    def documents(self) -> Iterator[dict[str, Any]]:
        """Yield ``{"id", "text", "metadata"?}`` dicts (validated later, per document)."""
        ...


class SourceLineError(ValueError):
    pass


class JsonlSource:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[str] = []

    def documents(self) -> Iterator[dict[str, Any]]:
        with self.path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    self.errors.append(f"{self.path}:{lineno}: invalid JSON ({exc.msg})")
                    continue
                if not isinstance(obj, dict):
                    self.errors.append(
                        f"{self.path}:{lineno}: expected an object, got {type(obj).__name__}"
                    )
                    continue
                yield obj


class FolderSource:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.errors: list[str] = []

    def documents(self) -> Iterator[dict[str, Any]]:
        for path in sorted(
            p for p in self.root.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
        ):
            rel = path.relative_to(self.root).as_posix()
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError) as exc:
                self.errors.append(f"{rel}: cannot read as UTF-8 text ({exc})")
                continue
            yield {"id": rel, "text": text, "metadata": {"path": rel}}


def open_source(path: str | Path) -> JsonlSource | FolderSource:
    p = Path(path)
    if p.is_dir():
        return FolderSource(p)
    if p.is_file():
        return JsonlSource(p)
    raise FileNotFoundError(f"input {str(p)!r} is neither a JSONL file nor a folder")
