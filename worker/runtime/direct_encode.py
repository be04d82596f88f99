"""``poolq encode --backend openvino`` without torch: dense ``embed`` from a cached graph.

When everything the run needs is already on disk, this module runs it without importing torch
(slow to import), the engine or the poolers:

* the fp32 graph (and, for int8, the int8 graph with the gate's verdict, passed, under the
  default floors) in the OpenVINO cache, converted by an earlier start (``openvino/cache.py``);
* that start's :class:`DirectPlan` (``openvino/direct_plan.py``): the ``embed`` pooler is a
  CLS/MEAN/LAST row, no projector, default model settings;
* a run asking for nothing more: ``--task embed`` only, no ``--dimensions``, no
  ``--report-quality``, the CPU, a prompt the model has.

Anything else (:func:`direct_start` returns None) loads the whole model
(``offline_encode.py``). The run: lines read in blocks of ``BLOCK_LINES``, tokenized (the same
tokenizer and truncation), cut into the engine's length buckets (``openvino/buckets.py``, over
the whole block: fuller buckets than a scheduler batch), run on the compiled model's streams,
pooled as each call finishes (``openvino/direct_pool.py``), and written in input order while
the next block runs. Outputs are the torch-free path's own float32 arithmetic, checked against
the full path in ``tests/engine/test_openvino_direct.py``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from types import SimpleNamespace
from typing import IO, TYPE_CHECKING, Any

from poolq.worker.runtime.encode_lines import EncodeOptions, EncodeSummary, line_chunks

if TYPE_CHECKING:
    from poolq.worker.engine.cpu.int8_report import QualityReport
    from poolq.worker.engine.execution.tokenizer import TextTokenizer
    from poolq.worker.engine.openvino.direct_plan import DirectPlan
    from poolq.worker.engine.openvino.direct_runner import DirectRunner

log = logging.getLogger("poolq.openvino")
BLOCK_LINES = 512  # texts bucketed together; a block is written while the next one runs

_Line = tuple[int, Any, str]


@dataclass(frozen=True)
class DirectStart:
    """What a torch-free run of ``path`` uses: its plan and the cached graph ``key``."""

    path: str
    plan: DirectPlan
    key: str
    precision: str  # float32 or int8
    gate: QualityReport | None = None  # int8: the cached verdict of the gate


def _cuda_present() -> bool:
    """Whether torch would pick CUDA for ``--device`` unset (then the full start decides)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia")


def direct_start(
    model: str,
    opts: EncodeOptions,
    *,
    dtype: str | None,
    device: str | None,
    report_quality: bool,
) -> DirectStart | None:
    """The torch-free run of this ``poolq encode``, when it may run that way (module doc)."""
    from poolq.worker.engine.process_options import process_options

    try:
        if process_options().backend != "openvino":
            return None
    except ValueError:
        return None  # the full start reports the bad setting
    if report_quality or opts.tasks != ("embed",) or opts.dimensions is not None:
        return None
    if dtype not in (None, "float32", "int8") or device not in (None, "cpu"):
        return None
    if (device is None and _cuda_present()) or not Path(model).is_dir():
        return None
    if importlib.util.find_spec("openvino") is None:
        return None
    try:
        return _cached(model, opts, "int8" if dtype == "int8" else "float32")
    except (OSError, RuntimeError, ValueError, PackageNotFoundError) as exc:
        log.debug("openvino: no torch-free start for %s: %s", model, exc)
        return None


def _cached(model: str, opts: EncodeOptions, precision: str) -> DirectStart | None:
    from poolq.worker.engine.checkpoints.description import Int8Floors
    from poolq.worker.engine.openvino import cache, direct_plan
    from poolq.worker.engine.openvino.quantize import MODES

    fp32 = cache.cache_key(model, sparse_head=False, precision="float32")
    plan = direct_plan.read(fp32)
    if plan is None or not cache.has(fp32) or plan.prompt(opts.prompt_name) is None:
        return None
    if precision == "float32":
        return DirectStart(model, plan, fp32, precision)
    floors = Int8Floors()  # poolq encode's: the model's defaults
    for mode in MODES:  # as the full start's gate walks them (openvino/backend.py _int8)
        key = cache.cache_key(model, sparse_head=False, precision=f"int8-{mode}")
        if cache.refused(key, floors) is not None:
            continue
        report = cache.passed(key, floors)
        if report is None or not cache.has(key):
            return None  # not quantized or not gated yet: the full start does it
        return DirectStart(model, plan, key, precision, report)
    return None  # refused in every mode: the full start raises the gate's error


def run_direct(
    start: DirectStart,
    input_path: Path,
    output_path: Path | None,
    opts: EncodeOptions,
    *,
    threads: int | None = None,
    max_batch_tokens: int | None = None,
) -> EncodeSummary:
    """Encode ``input_path`` as ``poolq encode`` does (same lines, errors and summary)."""
    from poolq.worker.engine.cpu.cpu_budget import (
        RESERVED_ENCODE_CPUS,
        StartProbe,
        explicit_threads,
    )

    explicit = explicit_threads(threads)  # a bad OMP_NUM_THREADS fails before anything loads
    probe = StartProbe.start()
    if not input_path.is_file():
        raise FileNotFoundError(f"input file {str(input_path)!r} does not exist")
    from poolq.worker.engine.execution.tokenizer import TextTokenizer
    from poolq.worker.engine.openvino.direct_runner import DirectRunner

    tok = TextTokenizer.from_folder(Path(start.path), start.plan.max_length)
    budget = probe.choose(explicit, RESERVED_ENCODE_CPUS)
    runner = DirectRunner.compile(start.plan, start.key, budget.threads, max_batch_tokens)
    log.info("backend openvino: openvino for %s (%s)", start.plan.model_id, runner.describe())
    summary = EncodeSummary(cpu=budget.summary(), gate=start.gate)
    with input_path.open(encoding="utf-8") as src:
        if output_path is None:
            _encode(runner, tok, src, sys.stdout, opts, summary)
        else:
            with output_path.open("w", encoding="utf-8") as dst:
                _encode(runner, tok, src, dst, opts, summary)
    return summary


def _encode(
    runner: DirectRunner,
    tok: TextTokenizer,
    src: IO[str],
    dst: IO[str],
    opts: EncodeOptions,
    summary: EncodeSummary,
    err: IO[str] = sys.stderr,
) -> None:
    """Tokenize block k+1 and write block k while block k+1 runs (one runner thread)."""
    plan = runner.plan
    prefix = plan.prompt(opts.prompt_name) or ""
    normalize = plan.normalize and opts.normalize
    pending: tuple[list[_Line], list[Any], Future[Any]] | None = None
    bar = _progress(err)
    with ThreadPoolExecutor(1, thread_name_prefix="poolq-ov-direct") as pool:
        for block in line_chunks(iter(src), summary, err, size=BLOCK_LINES):
            toks = tok.encode_batch([prefix + text for _, _, text in block])
            rows = [t for t in toks if opts.truncate or not t.truncated]
            future = pool.submit(runner.run, [t.ids for t in rows], normalize)
            if pending is not None:
                _write(*pending, dst, opts, plan.max_length, summary, err)
                bar.update(len(pending[0]))
            pending = (block, toks, future)
        if pending is not None:
            _write(*pending, dst, opts, plan.max_length, summary, err)
            bar.update(len(pending[0]))
    bar.close()
    dst.flush()


def _progress(err: IO[str]) -> Any:
    """tqdm's bar on a terminal (its import, 0.06 s, only there)."""
    if not err.isatty():
        return SimpleNamespace(update=lambda n: None, close=lambda: None)
    from tqdm import tqdm

    return tqdm(unit="doc", file=err, mininterval=0.5)


def _write(
    block: list[_Line],
    toks: list[Any],
    future: Future[Any],
    dst: IO[str],
    opts: EncodeOptions,
    max_length: int,
    summary: EncodeSummary,
    err: IO[str],
) -> None:
    vectors = iter(future.result())  # [accepted, H] fp32, in block order
    for (lineno, doc_id, _), t in zip(block, toks, strict=True):
        if t.truncated and not opts.truncate:
            rid = f"line {lineno} (id {doc_id!r})"
            summary.errors += 1
            print(
                f"poolq encode: request {rid!r}: input is longer than the model's max length "
                f"{max_length} tokens and truncate=False; skipped",
                file=err,
            )
            continue
        row = {"id": doc_id, "embed": next(vectors).tolist()}
        dst.write(json.dumps(row, separators=(",", ":")) + "\n")
        summary.written += 1
        summary.tokens += t.num_tokens
        summary.truncated += t.truncated
