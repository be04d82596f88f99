"""The report of ``eval_search.py``: the requirement (each hybrid fusion's recall@10 within
0.02 of the better of dense and sparse) and the printed tables, per document and chunk-level,
per mode and per query kind, with the multi-vector's bytes and the write rate."""

from __future__ import annotations

from typing import Any

from benchmarks.eval_search_runs import K


def requirement(modes: dict[str, Any]) -> dict[str, Any]:
    """Hybrid RRF and DBSF against their peer, the better of dense and sparse (recall@10)."""
    best_single = max(modes["dense"]["recall@10"], modes["sparse"]["recall@10"])
    return {
        "peer_recall@10": best_single,
        **{
            label: {
                "recall@10": modes[label]["recall@10"],
                "delta": modes[label]["recall@10"] - best_single,
                "ok": modes[label]["recall@10"] >= best_single - 0.02,
            }
            for label in ("hybrid-rrf", "hybrid-dbsf")
        },
    }


def print_report(out: dict[str, Any], dtype: str | None, pool_factor: int | None) -> None:
    modes = out["modes"]
    best_single = out["requirement"]["peer_recall@10"]
    kinds = sorted(next(iter(modes.values()))["by_kind"])
    counts = ", ".join(f"{k} {modes['dense']['by_kind'][k]['n']}" for k in kinds)
    print(f"pool_factor {pool_factor or 1} (the multi-vector's bytes are printed below)")
    print(
        f"dtype {dtype or 'default'}: "
        f"{out['documents']} documents ({out['points']} points) ingested in "
        f"{out['ingest_s']:.1f}s; {out['queries']} queries ({counts}), limit {K}, "
        f"document-level, candidates {out['candidates'] or 'default'}"
    )
    for title, table in (
        ("per document (group_by doc_id, the default)", modes),
        ("chunk-level list (group_by None), each document at its first chunk", out["modes_chunks"]),
    ):
        print(title)
        head = f"{'mode':12s} {'recall@10':>9s} {'MRR@10':>7s} {'hit@1':>6s} {'docs/q':>6s}"
        for k in kinds:
            head += f" {'R@10 ' + k[:5]:>11s} {'MRR ' + k[:5]:>10s}"
        print(head + f" {'encode ms':>9s} {'search ms':>9s} {'load1':>5s} {'steal':>6s}")
        for label, m in table.items():
            line = (
                f"{label:12s} {m['recall@10']:9.3f} {m['mrr@10']:7.3f} {m['hit@1']:6.3f} "
                f"{m['docs/q']:6.1f}"
            )
            for k in kinds:
                line += f" {m['by_kind'][k]['recall@10']:11.3f} {m['by_kind'][k]['mrr@10']:10.3f}"
            print(
                line + f" {1e3 * m['mean_encode_s']:9.1f} {1e3 * m['mean_search_s']:9.1f}"
                f" {m['load1']:5.1f} {m['steal_pct']:5.1f}%"
            )
    mv = out["multivector"]
    print(
        f"multi-vector {mv['name']!r}: {mv['datatype']}, {mv['rows_per_chunk']:.1f} rows x "
        f"{mv['dim']} a chunk on average: {mv['bytes_per_chunk'] / 1024:.1f} KiB a chunk; "
        f"write rate {out['points'] / out['ingest_s']:.1f} chunks/s (ingest, encoding included)"
    )
    req = out["requirement"]
    print(f"peer (better of dense and sparse) recall@10: {best_single:.3f}")
    for label in ("hybrid-rrf", "hybrid-dbsf"):
        r = req[label]
        print(
            f"{label}: recall@10 {r['recall@10']:.3f}, delta vs peer {r['delta']:+.3f} "
            f"(requirement >= -0.020) {'ok' if r['ok'] else 'MISS'}"
        )
