"""A deterministic benchmark corpus: passages of 20-400 words cut from the docstrings of the
Python standard library (the same on every machine with the same Python)."""

from __future__ import annotations

import importlib
import inspect

# fmt: off
MODULES = [  # the modules whose docstrings are cut, in this order
    "abc", "argparse", "array", "ast", "asyncio", "base64", "bisect", "calendar", "cmath",
    "codecs", "collections", "configparser", "contextlib", "copy", "csv", "dataclasses",
    "datetime", "decimal", "difflib", "dis", "email", "enum", "fnmatch", "fractions", "functools",
    "gettext", "glob", "gzip", "hashlib", "heapq", "hmac", "html", "http", "inspect", "io",
    "ipaddress", "itertools", "json", "locale", "logging", "lzma", "math", "mimetypes",
    "multiprocessing", "numbers", "operator", "os", "pathlib", "pprint", "queue", "random", "re",
    "reprlib", "secrets", "shutil", "smtplib", "socket", "sqlite3", "ssl", "statistics", "string",
    "struct", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "time", "tomllib",
    "types", "typing", "unittest", "urllib", "uuid", "warnings", "weakref", "xml", "zipfile",
    "zlib",
]
# fmt: on


def _docstrings() -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        objs = [mod]
        for _, obj in sorted(inspect.getmembers(mod), key=lambda kv: kv[0]):
            objs.append(obj)
            if inspect.isclass(obj):
                objs.extend(
                    v for _, v in sorted(vars(obj).items(), key=lambda kv: kv[0]) if callable(v)
                )
        for obj in objs:
            try:
                doc = inspect.getdoc(obj)
            except Exception:
                continue
            if doc:
                text = " ".join(doc.split())
                if text not in seen:
                    seen.add(text)
                    out.append(text)
    return out


def passages(n: int = 2000, min_words: int = 20, max_words: int = 400) -> list[str]:
    """``n`` passages: short docstrings are merged, long ones cut at ``max_words``."""
    out: list[str] = []
    buf: list[str] = []
    for doc in _docstrings():
        words = doc.split()
        while len(words) > max_words:
            out.append(" ".join(words[:max_words]))
            words = words[max_words:]
        buf.extend(words)
        if len(buf) >= min_words:
            out.append(" ".join(buf[:max_words]))
            buf = []
        if len(out) >= n:
            break
    return out[:n]


if __name__ == "__main__":
    ps = passages()
    lengths = sorted(len(p.split()) for p in ps)
    print(
        f"{len(ps)} passages, words min {lengths[0]} median {lengths[len(ps) // 2]} max {lengths[-1]}"
    )
