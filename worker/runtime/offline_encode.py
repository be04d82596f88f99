"""``poolq encode``: offline batch encoding of a JSONL file through the engine.

Input lines are ``{"id": ..., "text": ...}``; output lines, in input order, carry the id and one
field per requested task. ``--task score`` reads ``{"id": ..., "query": ..., "text": ...}`` pairs
and writes ``{"id": ..., "score": float}`` (a cross-encoder or an LLM reranker,
``AsyncEngine.score``). Chunks of lines are submitted concurrently so the engine's batches stay
full; results are written in order as soon as the oldest chunk is done. A malformed line is
reported on stderr with its line number and skipped; the exit code is then non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from poolq.worker.engine.checkpoints.description import ModelConfig
from poolq.worker.engine.checkpoints.loader import load_model
from poolq.worker.engine.cpu.cpu_budget import RESERVED_ENCODE_CPUS, explicit_threads
from poolq.worker.engine.cpu.cpu_threads import CpuProbe
from poolq.worker.engine.cpu.int8_quality import GATED_TASKS, QualityMeter
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.execution.device import resolve_device
from poolq.worker.pooling import PoolingParams, SparseEmbedding
from poolq.worker.pooling.outputs import PoolerOutput
from poolq.worker.runtime.encode_lines import EncodeOptions, EncodeSummary, line_chunks

__all__ = ["EncodeOptions", "EncodeSummary", "encode_file", "run_encode"]

IN_FLIGHT_CHUNKS = 8


def _params(opts: EncodeOptions) -> list[PoolingParams]:
    out = []
    for t in opts.tasks:
        kw: dict[str, Any] = {}
        if t == "embed" and opts.dimensions is not None:
            kw["dimensions"] = opts.dimensions
        if t in ("embed", "token_embed") and not opts.normalize:
            kw["use_activation"] = False
        out.append(PoolingParams(task=t, **kw))  # type: ignore[arg-type]
    return out


def output_json(out: PoolerOutput) -> Any:
    # score: a 0-dim tensor, so a float
    return out.as_dict() if isinstance(out, SparseEmbedding) else out.tolist()


async def encode_file(
    engine: AsyncEngine,
    src: IO[str],
    dst: IO[str],
    opts: EncodeOptions,
    *,
    err: IO[str] = sys.stderr,
    progress: bool = True,
    reference: AsyncEngine | None = None,
) -> EncodeSummary:
    """``reference``: an engine of the same model in float32; each text is also encoded there
    and compared (``summary.quality``), for ``--report-quality``."""
    summary = EncodeSummary()
    params = _params(opts)
    engine.model.pooler.validate(params, ["--task"] * len(params))
    if "score" in opts.tasks and not opts.pairs:
        raise ValueError("--task score reads (query, text) pairs: give it alone")
    bar = tqdm(unit="doc", file=err, disable=not progress, mininterval=0.5)
    pending: deque[tuple[list[tuple[int, Any, Any]], asyncio.Task[list[Any]], Any]] = deque()
    meter = None
    if reference is not None:
        model = engine.model
        meter = QualityMeter(model.config.int8_floors, model.description.vocab_size)
    compared = [t for t in opts.tasks if t in GATED_TASKS]

    def encode_in(eng: AsyncEngine, chunk: list[tuple[int, Any, Any]]) -> asyncio.Task[list[Any]]:
        inputs = [x for _, _, x in chunk]  # texts, or (query, text) pairs
        kw: dict[str, Any] = {
            "request_ids": [f"line {n} (id {i!r})" for n, i, _ in chunk],
            "truncate": opts.truncate,
            "return_exceptions": True,
        }
        if opts.pairs:
            return asyncio.create_task(eng.score(inputs, **kw))
        return asyncio.create_task(eng.encode(inputs, params, prompt_name=opts.prompt_name, **kw))

    def submit(chunk: list[tuple[int, Any, Any]]) -> None:
        ref = encode_in(reference, chunk) if reference is not None else None
        pending.append((chunk, encode_in(engine, chunk), ref))

    async def flush_oldest() -> None:
        chunk, task, ref_task = pending.popleft()
        refs = await ref_task if ref_task is not None else [None] * len(chunk)
        for (_, doc_id, _), res, ref in zip(chunk, await task, refs, strict=True):
            ok = not isinstance(res, Exception | None) and not isinstance(ref, Exception | None)
            if meter is not None and ok:
                meter.add({t: ref[t] for t in compared}, {t: res[t] for t in compared})
            if isinstance(res, Exception):
                summary.errors += 1
                print(f"poolq encode: {res}; skipped", file=err)
                continue
            row = {"id": doc_id, **{t: output_json(res[t]) for t in opts.tasks}}
            dst.write(json.dumps(row, separators=(",", ":")) + "\n")
            summary.written += 1
            summary.tokens += res.num_tokens
            summary.truncated += res.truncated
        bar.update(len(chunk))

    for chunk in line_chunks(iter(src), summary, err, pairs=opts.pairs):
        submit(chunk)
        while len(pending) >= IN_FLIGHT_CHUNKS:
            await flush_oldest()
    while pending:
        await flush_oldest()
    bar.close()
    dst.flush()
    if meter is not None:
        summary.quality = meter.report()
    return summary


def run_encode(
    model: str,
    input_path: Path,
    output_path: Path | None,
    opts: EncodeOptions,
    *,
    dtype: str | None = None,
    device: str | None = None,
    max_batch_tokens: int | None = None,
    report_quality: bool = False,
    threads: int | None = None,
) -> EncodeSummary:
    """``dtype`` None: float32 on the CPU (``auto`` is the worker's default, not this one's),
    bf16/fp16 on CUDA. ``report_quality`` (int8 only): compare with float32 on this file.
    ``threads``: intra-op CPU threads (None: ``OMP_NUM_THREADS``, else chosen, ``cpu_budget.py``)."""
    explicit_threads(threads)  # a bad OMP_NUM_THREADS fails before a model loads
    probe = CpuProbe.start()  # neighbours measured while the model loads
    if dtype is None and resolve_device(device).type == "cpu":
        dtype = "float32"
    if report_quality and dtype != "int8":
        raise ValueError(
            f"--report-quality compares int8 with float32: use it with --dtype int8, got "
            f"--dtype {dtype or 'default'}"
        )
    cfg = ModelConfig(model=model, dtype=dtype, device=device)  # type: ignore[arg-type]
    if not input_path.is_file():  # before loading a model for nothing
        raise FileNotFoundError(f"input file {str(input_path)!r} does not exist")
    pooling_model = load_model(cfg)
    if max_batch_tokens is None:  # OpenVINO: a forward as large as one call (no query waits here)
        max_batch_tokens = getattr(pooling_model.encoder, "offline_batch_tokens", None)
    reference = load_model(replace(cfg, dtype="float32")) if report_quality else None

    async def main() -> EncodeSummary:
        async with (
            AsyncEngine(pooling_model, max_batch_tokens=max_batch_tokens) as engine,
            (
                AsyncEngine(reference, max_batch_tokens=max_batch_tokens)
                if reference is not None
                else contextlib.nullcontext()
            ) as ref,
        ):
            encode = functools.partial(encode_file, engine, opts=opts, reference=ref)
            with input_path.open(encoding="utf-8") as src:
                if output_path is None:
                    return await encode(src, sys.stdout, progress=sys.stderr.isatty())
                with output_path.open("w", encoding="utf-8") as dst:
                    return await encode(src, dst)

    with probe.applied(threads, RESERVED_ENCODE_CPUS) as budget:
        summary = asyncio.run(main())
    summary.cpu = budget.summary()
    summary.gate = pooling_model.int8_report
    return summary
