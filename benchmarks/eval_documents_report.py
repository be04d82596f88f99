"""What ``eval_documents.py`` prints: the table of the document set (per mode, against the
naive baseline), its misses and leftovers; and the plain-text case (``--plain``), the man pages
as a folder of files and as JSON lines, with its requirement."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.eval_plaintext import default_vs_dense, run, table


def report(out: dict[str, Any]) -> None:
    print(f"{len(out['files'])} files, {out['questions']} questions "
          f"({out['pdf_questions']} on PDFs); ingest: {out['ingest']}")  # fmt: skip
    print(
        "\n| mode | doc hit@3 | page hit@3 (PDF) | doc hit@1 | page hit@3: real PDFs | made PDFs |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for mode, s in out["table"].items():
        name = "baseline (naive text, 1,000-char windows, dense)" if mode == "baseline" else mode
        name += " (the default)" if mode == out.get("default") else ""
        cells = " | ".join(f"{v:.1f}" for v in s.values())
        print(f"| {name} | {cells} |")
    c = out["citations"]
    print(
        f"\nanswer phrase whole in a chunk of its file: {c['whole']}; every such chunk cites "
        f"the right PDF page: {c['cited']} {c['wrong']}"
    )
    print(f"best poolq mode: {out['best']}")
    for mode in (out["best"], "baseline"):
        for r in out["rows"][mode]:
            if not r["doc@3"] or r["page@3"] is False:
                print(f"  {mode} miss {r['id']}: {r['top']}")
    for p in out["chunk_problems"][:20]:
        print(f"chunk: {p}")
    for f in out["fails"]:
        print(f"FAIL: {f}", file=sys.stderr)


def plain_case(out_dir: Path, as_json: bool) -> int:
    """The man pages indexed as a folder of ``.txt`` files and as the same texts in JSON lines;
    exit status 1 when the folder's default mode finds fewer right pages first, or among the
    first 3, than dense does."""
    results = run(out_dir / "plain", jsonl=True)
    misses = default_vs_dense(results["sets"]["folder"]["modes"])
    if as_json:
        print(json.dumps(results | {"misses": misses}, indent=1))
    else:
        c = results["corpus"]
        print(f"{c['pages']} man pages ({c['chars'] / 1e6:.2f} M characters, {c['packages']}), "
              f"{results['questions']} questions")  # fmt: skip
        for name, s in results["sets"].items():
            print(
                f"{name}: {s['documents']} documents, {s['points']} chunks, {s['ingest_s']:.0f} s"
            )
        print("\n".join(["", *table(results)]))
        for m in misses:
            print(f"MISS (folder): {m}", file=sys.stderr)
    return 1 if misses else 0
