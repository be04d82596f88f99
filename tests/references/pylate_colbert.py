"""PyLate's own build, save and encode of a ColBERT on a random ModernBERT backbone; run as a
script under the pinned PyLate stack of ``build/pylate-ref`` (PyLate 1.6.0 needs
sentence-transformers 5.3 / transformers <= 5.3; the project's venv has newer ones):

    PYTHONPATH=build/pylate-ref python tests/references/pylate_colbert.py BASE OUT TEXTS.json

``BASE``: a transformers ``ModernBertModel`` folder with a tokenizer. PyLate adds its ``[Q] ``
/ ``[D] `` prefix tokens and a Dense projection, saves the model to ``OUT`` (its real on-disk
layout), reloads it from there and writes ``OUT/reference.pt``: ``{"query": [...],
"document": [...]}`` per text, ``ColBERT.encode`` float32 ``[tokens, dim]``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch


def main(base: str, out: str, texts_json: str) -> None:
    from pylate import models

    texts = json.loads(Path(texts_json).read_text())
    torch.manual_seed(5)
    built = models.ColBERT(
        model_name_or_path=base,
        embedding_size=48,
        query_length=32,
        document_length=300,
        device="cpu",
    )
    built.save(out)
    model = models.ColBERT(model_name_or_path=out, device="cpu")
    result = {
        form: [
            torch.as_tensor(e, dtype=torch.float32)
            for e in model.encode(texts, is_query=form == "query", batch_size=4)
        ]
        for form in ("query", "document")
    }
    torch.save(result, f"{out}/reference.pt")


if __name__ == "__main__":
    main(*sys.argv[1:4])
