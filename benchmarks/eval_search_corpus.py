"""The labelled data of ``eval_search.py``: the demo corpus built in a fresh interpreter (what
``poolq demo`` gets), the fingerprint of the labelled documents' texts, and the queries of
``search_queries.jsonl`` with their relevant ids cut to the corpus."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QUERIES = Path(__file__).resolve().parent / "search_queries.jsonl"
# sha256 of "id\ttext\n" of every labelled document, in id order, in the corpus they were
# judged on (``poolq demo``'s)
LABELLED_SHA256 = "4876d7b7c77bb1575d4d2e8caae43d86c69a7d005e7c8666741e0903b8823f9f"


def build_corpus(path: Path, n: int) -> dict[str, str]:
    """The demo corpus, built in a fresh interpreter (see the module docstring)."""
    code = (
        "import sys; from pathlib import Path; from poolq.worker.cli.demo import _sample_corpus; "
        "_sample_corpus(Path(sys.argv[1]), int(sys.argv[2]))"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(n)], cwd=ROOT, check=True)
    lines = path.read_text(encoding="utf-8").splitlines()
    return {d["id"]: d["text"] for d in map(json.loads, lines)}


def labelled_fingerprint(docs: dict[str, str], queries_path: Path) -> str | None:
    """``LABELLED_SHA256`` recomputed on ``docs``; None when some labelled id is missing."""
    lines = queries_path.read_text(encoding="utf-8").splitlines()
    ids = sorted({r for line in lines if line.strip() for r in json.loads(line)["relevant"]})
    if any(i not in docs for i in ids):
        return None
    h = hashlib.sha256()
    for i in ids:
        h.update(f"{i}\t{docs[i]}\n".encode())
    return h.hexdigest()


def load_queries(path: Path, doc_ids: set[str]) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        relevant = [r for r in q["relevant"] if r in doc_ids]
        if relevant:
            out.append(q | {"relevant": relevant})
    return out
