"""The parent side of ``bench_store_scale.py``, once both backends have run: the table of
their JSON lines, the targets (Edge vs local mode writes, rerank p50 and RSS at the largest
size, growth from the smallest to the largest) and where the costs bend between sizes."""

from __future__ import annotations

import itertools

import numpy as np

from benchmarks.store_scale_measure import MODES

WRITE_RATIO_TARGET = 5.0
RERANK_P50_TARGET_MS = 50.0
RSS_TARGET_BYTES = 2 << 30
GROWTH_TARGET = 2.0


def mib(x: float) -> str:
    return f"{x / 2**20:,.0f} MiB"


def table(rows: list[dict]) -> None:
    head = " ".join(f"{m + ' p50/p95 ms':>17}" for m in MODES)
    print(
        f"{'backend':7} {'points':>7} {'write/s':>8} {'settle':>7} {'VmRSS':>10} {'anon':>9} "
        f"{'disk':>10} {head}  queries"
    )
    for r in rows:
        lat = " ".join(f"{r[m]['p50_ms']:>8.1f}/{r[m]['p95_ms']:<8.1f}" for m in MODES)
        n = "/".join(str(r[m]["n"]) for m in MODES)
        print(
            f"{r['backend']:7} {r['size']:>7} {r['write_pps']:>8.0f} {r['settle_s']:>6.1f}s "
            f"{mib(r['VmRSS']):>10} {mib(r['RssAnon']):>9} {mib(r['disk']):>10} {lat}  {n}"
        )


def check(edge: list[dict], local: list[dict]) -> list[str]:
    misses: list[str] = []

    def target(ok: bool, text: str) -> None:
        print(f"  {'ok  ' if ok else 'MISS'} {text}")
        if not ok:
            misses.append(text)

    print("\ntargets:")
    for r in edge:
        target(r["count"] == r["size"], f"edge {r['size']}: count {r['count']} exact")
        target(all(r[m]["empty"] == 0 for m in MODES), f"edge {r['size']}: no empty result")
        target(r.get("rerank_equals_maxsim", False), f"edge {r['size']}: rerank = MaxSim here")
    if local:
        lo, eo = local[0], next((r for r in edge if r["size"] == local[0]["size"]), edge[0])
        if lo["size"] != eo["size"]:
            print(f"  (local mode reached {lo['size']} points: compared at its size)")
        ratio = eo["write_pps"] / lo["write_pps"]
        target(
            ratio >= WRITE_RATIO_TARGET,
            f"write {eo['write_pps']:.0f}/s vs local mode {lo['write_pps']:.1f}/s at "
            f"{lo['size']}: {ratio:.1f}x (>= {WRITE_RATIO_TARGET:.0f}x)",
        )
        for m in MODES:
            print(
                f"       {m}: edge p50 {eo[m]['p50_ms']:.1f} ms vs local mode "
                f"{lo[m]['p50_ms']:.1f} ms ({lo[m]['p50_ms'] / eo[m]['p50_ms']:.0f}x)"
            )
    big, small = edge[-1], edge[0]
    target(
        big["rerank"]["p50_ms"] <= RERANK_P50_TARGET_MS,
        f"rerank p50 at {big['size']}: {big['rerank']['p50_ms']:.1f} ms "
        f"(<= {RERANK_P50_TARGET_MS:.0f})",
    )
    target(
        big["VmRSS"] <= RSS_TARGET_BYTES,
        f"RSS at {big['size']}: {mib(big['VmRSS'])} (anonymous {mib(big['RssAnon'])}; "
        f"<= {mib(RSS_TARGET_BYTES)})",
    )
    for r in edge:
        if "rerank_warm_p50_ms" in r:
            print(f"       rerank p50 at {r['size']} with the page cache warm: "
                  f"{r['rerank_warm_p50_ms']:.1f} ms")  # fmt: skip
    bends(edge)
    if len(edge) > 1:
        print("  growth, smallest -> largest (linear: per-point cost flat, latency <= x points):")
        scale = big["size"] / small["size"]
        per_point = big["step_s_per_point"] / small["step_s_per_point"]
        target(per_point <= GROWTH_TARGET, f"write cost per point x{per_point:.2f}")
        disk = (big["disk"] / big["size"]) / (small["disk"] / small["size"])
        target(disk <= GROWTH_TARGET, f"disk per point x{disk:.2f}")
        for m in MODES:
            g = big[m]["p50_ms"] / small[m]["p50_ms"]
            target(g <= scale, f"{m} p50 x{g:.2f} for x{scale:.0f} points")
        rss = big["VmRSS"] / small["VmRSS"]
        target(rss <= scale * 1.02, f"RSS x{rss:.2f} for x{scale:.0f} points")
    return misses


def bends(rows: list[dict]) -> None:
    """Growth exponents between successive sizes: cost ~ points^e (1 = linear, 0 = flat)."""
    if len(rows) < 2:
        return
    print("  where it bends: cost ~ points^e between sizes (e > 1 grows faster than linear)")
    metrics = {
        "write time": lambda r: r["size"] / r["write_pps"],
        "disk": lambda r: r["disk"],
        "VmRSS": lambda r: r["VmRSS"],
        **{f"{m} p50": (lambda r, m=m: r[m]["p50_ms"]) for m in MODES},
    }
    for a, b in itertools.pairwise(rows):
        dx = np.log(b["size"] / a["size"])
        parts = [f"{k} {np.log(f(b) / f(a)) / dx:.2f}" for k, f in metrics.items()]
        print(f"       {a['size']} -> {b['size']}: " + ", ".join(parts))
