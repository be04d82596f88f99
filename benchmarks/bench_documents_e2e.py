"""End to end: a mixed folder of real documents (~1,000 PDF pages, ~100 HTML pages) ingested by
one `poolq worker --role all` (parse process + encode worker), against the same extracted text
enqueued as JSONL, through the same worker, in the same run.

Target: the folder takes <= 1.15x the JSONL's wall time (parsing overlaps encoding). Rounds are
interleaved (folder, JSONL, folder, ...), each into a fresh collection; best of N each. CPU is
reported by process (benchmarks/procs.py): the encode worker, the parse process, its parse
children, Redis and the client, in ms per page and per chunk.

    python benchmarks/bench_documents_e2e.py [--rounds 2] [--pdf-pages 1000] [--html-pages 100]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import procs  # noqa: E402
from benchmarks.parse_corpus import load, of_kind  # noqa: E402
from poolq.worker.dev.local_redis import LocalRedis  # noqa: E402
from poolq.worker.dev.local_worker import WorkerProcess  # noqa: E402
from poolq.worker.parse.layout import text_and_layout  # noqa: E402
from poolq.worker.parse.readers import read_document  # noqa: E402

TARGET = 1.15


def pick(entries: list[dict], kind: str, pages: int) -> list[dict]:
    """Files of ``kind`` in manifest order until about ``pages`` pages (HTML: one a file)."""
    out, n = [], 0
    for e in sorted(of_kind(entries, kind), key=lambda e: int(e["pages"])):
        if n >= pages:
            break
        if kind == "pdf" and n + int(e["pages"]) > pages * 1.2:
            continue
        out.append(e)
        n += int(e["pages"]) if kind == "pdf" else 1
    return out


def stage(files: list[dict], folder: Path, jsonl: Path) -> tuple[int, int]:
    """The folder (links to the files) and the same text as JSONL; (pages, characters)."""
    folder.mkdir(parents=True)
    lines, pages, chars = [], 0, 0
    for e in files:
        src = Path(e["file"])
        (folder / src.name).symlink_to(src)
        parsed = read_document(src.read_bytes(), src.name)
        text, _ = text_and_layout(parsed, source=src.name)
        lines.append(json.dumps({"id": src.name, "text": text}))
        pages += parsed.pages or 1
        chars += len(text)
    jsonl.write_text("\n".join(lines) + "\n")
    return pages, chars


def cpu_by_process(worker: WorkerProcess, redis_pid: int) -> dict[str, float]:
    assert worker.proc is not None
    pid = worker.proc.pid
    kids = procs.child_pids(pid)
    parse_pid = next((k for k in kids if b"--role" in Path(f"/proc/{k}/cmdline").read_bytes()), 0)
    return {
        "encode worker": procs.process_cpu_s(pid, children=False)
        + sum(procs.process_cpu_s(k) for k in kids if k != parse_pid),  # (its store process)
        "parse process": procs.process_cpu_s(parse_pid, children=False) if parse_pid else 0.0,
        "parse children": sum(procs.process_cpu_s(k) for k in procs.child_pids(parse_pid))
        if parse_pid
        else 0.0,
        "redis": procs.process_cpu_s(redis_pid, children=False),
    }


def enqueue(url: str, source: Path, collection: str) -> tuple[float, float, dict]:
    """(wall s, client CPU s, summary) of `poolq enqueue SOURCE --wait`."""
    cmd = [sys.executable, "-m", "poolq.worker", "enqueue", str(source), "--collection",
           collection, "--wait", "--json", "--redis-url", url]  # fmt: skip
    t0, c0 = time.perf_counter(), os.times()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    c1 = os.times()
    wall = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        sys.exit(f"enqueue failed ({out.returncode}): {out.stderr[-2000:]}")
    client = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    return wall, client, json.loads(out.stdout.splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pdf-pages", type=int, default=1000)
    ap.add_argument("--html-pages", type=int, default=100)
    a = ap.parse_args()
    entries = load()
    files = pick(entries, "pdf", a.pdf_pages) + pick(entries, "html", a.html_pages)
    tmp = Path(tempfile.mkdtemp(prefix="poolq-e2e-"))
    pages, chars = stage(files, tmp / "folder", tmp / "text.jsonl")
    print(f"corpus: {len(files)} files, {pages} pages, {chars / 1e6:.1f} M characters")
    results: dict[str, list[dict]] = {"folder": [], "jsonl": []}
    with LocalRedis(tmp / "redis") as redis, WorkerProcess(redis.url, tmp / "qdrant") as worker:
        redis_pid = redis.proc.pid if getattr(redis, "proc", None) else 0
        for r in range(a.rounds):
            for name, source in (("folder", tmp / "folder"), ("jsonl", tmp / "text.jsonl")):
                state = procs.cpu_counters()
                before = cpu_by_process(worker, redis_pid)
                wall, client, summary = enqueue(redis.url, source, f"{name}-{r}")
                after = cpu_by_process(worker, redis_pid)
                cpu = {k: after[k] - before[k] for k in after} | {"client": client}
                steal = procs.steal_pct(state, procs.cpu_counters())
                results[name].append(
                    {"wall": wall, "cpu": cpu, "points": summary["points"], "steal": steal}
                )
                print(f"round {r} {name:6}: {wall:6.2f} s, {summary['points']} chunks, "
                      f"{summary['documents']} documents, steal {steal:.1f}%")  # fmt: skip
    best = {k: min(v, key=lambda x: x["wall"]) for k, v in results.items()}
    ratio = best["folder"]["wall"] / best["jsonl"]["wall"]
    print(f"\nwall: folder {best['folder']['wall']:.2f} s, JSONL {best['jsonl']['wall']:.2f} s: "
          f"{ratio:.3f}x (target <= {TARGET}x)")  # fmt: skip
    print("CPU ms by process (best round of each) | per page | per chunk")
    for name, b in best.items():
        for proc, s in b["cpu"].items():
            print(f"  {name:6} {proc:15} {1000 * s / pages:8.2f} {1000 * s / b['points']:8.3f}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
