"""The performance page's figures: a benchmark writes its run as JSON, then draws its plot from
that JSON alone (so a plot can be redrawn from a saved run, and a run's numbers and its picture
never disagree).

``--figures DIR`` on a benchmark writes ``DIR/<name>.json`` and ``DIR/<name>.png``. The page's
runs are kept in ``benchmarks/runs/<name>.json`` and their plots in
``docs/images/perf-<name>.png``; ``python -m benchmarks.figures NAME JSON PNG`` redraws one from
a saved run. matplotlib comes with the ``docs`` extra.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def save_run(folder: Path, name: str, run: dict[str, Any]) -> Path:
    """Write ``run`` as ``folder/name.json`` and draw ``folder/name.png`` from that file."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{name}.json"
    data.write_text(json.dumps(run, indent=1, sort_keys=True))
    png = folder / f"{name}.png"
    draw(name, data, png)
    print(f"figures: {data} and {png}")
    return png


def draw(name: str, data: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no screen
    import matplotlib.pyplot as plt

    run = json.loads(data.read_text())
    fig, ax = plt.subplots(figsize=(7.0, 3.6), dpi=110)
    PLOTS[name](ax, run)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def _search_latency(ax: Any, run: dict[str, Any]) -> None:
    """p50 and p95 of a search's wall time per mode, on an idle worker and under the backlog."""
    modes = run["modes"]
    x = np.arange(len(modes))
    width = 0.2
    bars = [
        ("idle p50", "idle", 50, "#9ecae1"),
        ("idle p95", "idle", 95, "#3182bd"),
        ("backlog p50", "busy", 50, "#fdae6b"),
        ("backlog p95", "busy", 95, "#e6550d"),
    ]
    for i, (label, cond, q, color) in enumerate(bars):
        ms = [1e3 * float(np.percentile(run[cond][m], q)) for m in modes]
        ax.bar(x + (i - 1.5) * width, ms, width, label=label, color=color)
    ax.set_xticks(x, modes)
    ax.set_ylabel("search wall time, ms")
    ax.set_title(
        f"Search while {run['chunks']:,} chunks drain ({run['drain_chunks_s']:.0f} chunks/s)"
    )
    ax.legend(fontsize=8)


def _host_path(ax: Any, run: dict[str, Any]) -> None:
    """CPU ms per chunk by process on the server path, beside the peer building the upserts."""
    # process -> ms; the Qdrant-protocol stand-in is the server's side, not poolq's
    procs = {k: v for k, v in run["cpu_ms_per_chunk"].items() if "not counted" not in k}
    names = [*procs, "peer: qdrant-client gRPC upserts", "poolq: upserts encoded + sent"]
    ms = [*procs.values(), run["peer_grpc_ms"], run["poolq_upsert_ms"]]
    colors = ["#3182bd"] * len(procs) + ["#e6550d", "#31a354"]
    y = np.arange(len(names))
    ax.barh(y, ms, color=colors)
    ax.set_yticks(y, names, fontsize=8)
    ax.invert_yaxis()
    for yi, v in zip(y, ms, strict=True):
        ax.text(v, yi, f" {v:.2f}", va="center", fontsize=8)
    ax.set_xlabel("CPU ms per chunk")
    ax.set_title(f"Host CPU per chunk, worker over gRPC ({run['chunks']:,} chunks)")


PLOTS: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "search-latency": _search_latency,
    "host-path": _host_path,
}


if __name__ == "__main__":
    draw(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
