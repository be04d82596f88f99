"""Host CPU a chunk, a folder of files against the same text as JSON lines: Markdown files with
a title (a standard-library docstring each, ``ingest/sample_corpus.py``) indexed with ``poolq
enqueue FOLDER --wait`` (parse stage, then the ingest jobs it hands on, each chunk encoded with
its title before it), against the texts the parse stage makes of them sent as ``{"id",
"text"}`` JSON lines (about as many chunks), through the same worker, around the
near-free model of ``bench_host_path.py`` (``host_path_model.py``), on the embedded store and
over gRPC to the Qdrant-protocol stand-in (``--server``: both paths, one after the other).

    python benchmarks/bench_files_host.py [--files 1000] [--rounds 5] [--path P]

CPU time comes from ``/proc`` by process (``benchmarks/procs.py``) and, in the worker, by role
of thread (``host_path_server.thread_cpu_s``): the worker's interpreter, its store process,
Redis and the client (``poolq enqueue``'s process) are counted; the parse stage (the parse
process and its sandboxed children) and the stand-in are printed but not counted, and neither
is the compute thread (the forward of a chunk: a parsed file's chunk also holds its context's
tokens). Rounds interleave (folder, JSON lines, ...), each into a new collection, after one
warm-up round of each; each figure is its best round.

Target, each path: the folder's counted CPU a chunk <= :data:`TARGET` x the JSON lines' (what
a run on a shared 2-core machine moves by from round to round). Exit status 1 on a miss. The
encode worker's share (its threads but the forward, and its store process) is printed apart:
the rest, Redis and the client, is where a folder's files travel to the parse stage and back.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import procs
from benchmarks.host_path_model import build_tiny_bert, profile_toml
from benchmarks.host_path_server import thread_cpu_s
from poolq.ingest.sample_corpus import passages
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from poolq.worker.parse.layout import text_and_layout
from poolq.worker.parse.readers import read_document
from tests.support.endpoint_process import EndpointProcess

TARGET = 1.05
PATHS = ("embedded", "server")


def stage(tmp: Path, files: int) -> tuple[Path, Path]:
    """The folder of Markdown files (a title, then one passage) and the JSON lines of their
    texts as the parse stage makes them (the title's line, a blank line, the passage)."""
    folder, lines = tmp / "files", []
    folder.mkdir()
    for i, passage in enumerate(passages(files)):
        name = f"notes-{i:04d}.md"
        data = f"# Notes on the library, part {i + 1}\n\n{passage}\n".encode()
        (folder / name).write_bytes(data)
        text, _ = text_and_layout(read_document(data, name), source=None)
        lines.append(json.dumps({"id": name, "text": text}))
    jsonl = tmp / "notes.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    return folder, jsonl


class Processes:
    """CPU seconds by process of one worker (its interpreter's threads by role, its store
    process, its parse process and that one's children), Redis and the stand-in."""

    def __init__(self, worker: int, redis: int, endpoint: int | None) -> None:
        self.worker, self.redis, self.endpoint = worker, redis, endpoint

    def read(self) -> dict[str, float]:
        kids = procs.child_pids(self.worker)
        parse = [k for k in kids if b"--role" in Path(f"/proc/{k}/cmdline").read_bytes()]
        out = {f"worker: {role}": s for role, s in sorted(thread_cpu_s(self.worker).items())}
        out |= {
            "store process": sum(procs.process_cpu_s(k) for k in kids if k not in parse),
            "redis": procs.process_cpu_s(self.redis),
            "parse stage": sum(procs.process_cpu_s(k) for k in parse),
        }
        if self.endpoint is not None:
            out["stand-in"] = procs.process_cpu_s(self.endpoint)
        return out


NOT_COUNTED = ("worker: compute", "parse stage", "stand-in")


def hot_path(ms: dict[str, float]) -> float:
    """The encode worker's share of the counted CPU: its threads but the forward, and its
    store process (the rest is Redis and the client)."""
    worker = sum(v for k, v in ms.items() if k.startswith("worker: ") and k not in NOT_COUNTED)
    return worker + ms.get("store process", 0.0)


def enqueue(url: str, source: Path, collection: str) -> tuple[float, int]:
    """(client CPU s, chunks written) of ``poolq enqueue SOURCE --wait``."""
    cmd = [sys.executable, "-m", "poolq.worker", "enqueue", str(source), "--collection",
           collection, "--wait", "--json", "--redis-url", url]  # fmt: skip
    c0 = os.times()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    c1 = os.times()
    if r.returncode != 0:
        sys.exit(f"enqueue {source} failed ({r.returncode}): {r.stderr[-2000:]}")
    client = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    return client, int(json.loads(r.stdout.splitlines()[-1])["points"])


def one_path(path: str, tmp: Path, toml: str, sources: dict[str, Path], rounds: int) -> dict:
    """Per source, the best round's CPU ms a chunk by process (and the chunks)."""
    cfg = tmp / f"poolq-{path}.toml"
    cfg.write_text(toml)
    best: dict[str, dict] = {}
    with contextlib.ExitStack() as stack:
        endpoint = (
            stack.enter_context(EndpointProcess(tmp / "endpoint")) if path == "server" else None
        )
        redis = stack.enter_context(LocalRedis(tmp / f"redis-{path}"))
        worker = WorkerProcess(
            redis.url, tmp / f"qdrant-{path}", env={"POOLQ_CONFIG": str(cfg)},
            qdrant_url=endpoint.url if endpoint else None, log=tmp / f"worker-{path}.log",
        )  # fmt: skip
        stack.callback(worker.stop)
        worker.start(ready_timeout_s=900)
        assert worker.proc is not None and redis.proc is not None
        ep = endpoint.proc.pid if endpoint and endpoint.proc else None
        cpu = Processes(worker.proc.pid, redis.proc.pid, ep)
        for name, source in sources.items():
            enqueue(redis.url, source, f"warm-{name}")
        for r in range(rounds):
            for name, source in sources.items():
                load, steal0, t0 = os.getloadavg()[0], procs.cpu_counters(), time.perf_counter()
                before = cpu.read()
                client, chunks = enqueue(redis.url, source, f"{name}-{r}")
                after = cpu.read()
                ms = {k: 1000 * (after[k] - before.get(k, 0.0)) / chunks for k in after}
                ms["client"] = 1000 * client / chunks
                counted = sum(v for k, v in ms.items() if k not in NOT_COUNTED)
                steal = procs.steal_pct(steal0, procs.cpu_counters())
                print(f"{path} round {r + 1} {name:6}: {chunks} chunks in "
                      f"{time.perf_counter() - t0:.1f} s, counted {counted:.3f} ms/chunk "
                      f"(load {load:.1f}, steal {steal:.1f}%)", flush=True)  # fmt: skip
                if name not in best or counted < best[name]["counted"]:
                    best[name] = {"counted": counted, "ms": ms, "chunks": chunks}
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--path", choices=PATHS, action="append", help="default: both")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="poolq-files-host-"))
    folder, jsonl = stage(tmp, a.files)
    toml = profile_toml(build_tiny_bert(tmp / "model"))
    misses = []
    for path in a.path or PATHS:
        best = one_path(path, tmp, toml, {"folder": folder, "jsonl": jsonl}, a.rounds)
        print(f"\n{path}: CPU ms a chunk, best round of {a.rounds} "
              f"({a.files} files, {best['folder']['chunks']} chunks)")  # fmt: skip
        print(f"  {'process':24} {'folder':>8} {'JSONL':>8}")
        f_ms, j_ms = best["folder"]["ms"], best["jsonl"]["ms"]
        for k in sorted(set(f_ms) | set(j_ms)):
            mark = "  (not counted)" if k in NOT_COUNTED else ""
            print(f"  {k:24} {f_ms.get(k, 0.0):8.3f} {j_ms.get(k, 0.0):8.3f}{mark}")
        hot = [hot_path(best[k]["ms"]) for k in ("folder", "jsonl")]
        print(f"  {'of it, the encode worker':24} {hot[0]:8.3f} {hot[1]:8.3f}  folder / JSONL "
              f"{hot[0] / hot[1]:.3f} (its threads but the forward, and its store process)")  # fmt: skip
        f, j = best["folder"]["counted"], best["jsonl"]["counted"]
        ok = f <= TARGET * j
        print(f"  {'counted':24} {f:8.3f} {j:8.3f}  folder / JSONL {f / j:.3f} "
              f"(target <= {TARGET}) {'ok' if ok else 'MISS'}")  # fmt: skip
        misses += [] if ok else [path]
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
