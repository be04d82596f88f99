"""``poolq encode``: offline batch encoding of a JSONL file through the engine.

Input lines are ``{"id": ..., "text": ...}``; output lines, in input order, carry the id and one
field per requested task. Chunks of lines are submitted concurrently so the engine's batches stay
full; results are written in order as soon as the oldest chunk is done. A malformed line is
reported on stderr with its line number and skipped; the exit code is then non-zero.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.loader import ModelConfig, load_model
from poolq.worker.pooling import PoolingParams, SparseEmbedding
from poolq.worker.pooling.outputs import PoolerOutput

CHUNK_LINES = 256
IN_FLIGHT_CHUNKS = 8


@dataclass(frozen=True)
class EncodeOptions:
    tasks: tuple[str, ...]
    dimensions: int | None = None
    normalize: bool = True
    truncate: bool = True
    prompt_name: str | None = None


@dataclass
class EncodeSummary:
    lines: int = 0
    written: int = 0
    errors: int = 0
    tokens: int = 0
    truncated: int = 0


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


def output_json(task: str, out: PoolerOutput) -> Any:
    if isinstance(out, SparseEmbedding):
        return out.as_dict()
    assert out is not None
    return out.tolist()


def _parse(lineno: int, line: str) -> tuple[Any, str]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(
            f"line {lineno}: expected an object with 'id' and 'text', got {type(obj).__name__}"
        )
    if "id" not in obj:
        raise ValueError(f"line {lineno}: missing field 'id'")
    if not isinstance(obj["id"], str | int) or isinstance(obj["id"], bool):
        raise ValueError(
            f"line {lineno}: field 'id' must be a string or an integer, got {type(obj['id']).__name__}"
        )
    if "text" not in obj:
        raise ValueError(f"line {lineno} (id {obj['id']!r}): missing field 'text'")
    if not isinstance(obj["text"], str):
        raise ValueError(
            f"line {lineno} (id {obj['id']!r}): field 'text' must be a string, got {type(obj['text']).__name__}"
        )
    return obj["id"], obj["text"]


def _chunks(
    lines: Iterator[str], summary: EncodeSummary, err: IO[str]
) -> Iterator[list[tuple[int, Any, str]]]:
    chunk: list[tuple[int, Any, str]] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        summary.lines += 1
        try:
            doc_id, text = _parse(lineno, line)
        except ValueError as exc:
            summary.errors += 1
            print(f"poolq encode: {exc}; skipped", file=err)
            continue
        chunk.append((lineno, doc_id, text))
        if len(chunk) >= CHUNK_LINES:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


async def encode_file(
    engine: AsyncEngine,
    src: IO[str],
    dst: IO[str],
    opts: EncodeOptions,
    *,
    err: IO[str] = sys.stderr,
    progress: bool = True,
) -> EncodeSummary:
    summary = EncodeSummary()
    params = _params(opts)
    engine.model.pooler.validate(params, ["--task"] * len(params))
    bar = tqdm(unit="doc", file=err, disable=not progress, mininterval=0.5)
    pending: deque[tuple[list[tuple[int, Any, str]], asyncio.Task[list[Any]]]] = deque()

    def submit(chunk: list[tuple[int, Any, str]]) -> None:
        task = asyncio.create_task(  # noqa: RUF006 - kept in `pending`
            engine.encode(
                [t for _, _, t in chunk],
                params,
                request_ids=[f"line {n} (id {i!r})" for n, i, _ in chunk],
                truncate=opts.truncate,
                prompt_name=opts.prompt_name,
                return_exceptions=True,
            )
        )
        pending.append((chunk, task))

    async def flush_oldest() -> None:
        chunk, task = pending.popleft()
        for (_, doc_id, _), res in zip(chunk, await task, strict=True):
            if isinstance(res, Exception):
                summary.errors += 1
                print(f"poolq encode: {res}; skipped", file=err)
                continue
            row = {"id": doc_id, **{t: output_json(t, res[t]) for t in opts.tasks}}
            dst.write(json.dumps(row, separators=(",", ":")) + "\n")
            summary.written += 1
            summary.tokens += res.num_tokens
            summary.truncated += res.truncated
        bar.update(len(chunk))

    for chunk in _chunks(iter(src), summary, err):
        submit(chunk)
        while len(pending) >= IN_FLIGHT_CHUNKS:
            await flush_oldest()
    while pending:
        await flush_oldest()
    bar.close()
    dst.flush()
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
) -> EncodeSummary:
    cfg = ModelConfig(model=model, dtype=dtype, device=device)  # type: ignore[arg-type]
    pooling_model = load_model(cfg)

    async def main() -> EncodeSummary:
        async with AsyncEngine(pooling_model, max_batch_tokens=max_batch_tokens) as engine:
            with input_path.open(encoding="utf-8") as src:
                if output_path is None:
                    return await encode_file(
                        engine, src, sys.stdout, opts, progress=sys.stderr.isatty()
                    )
                with output_path.open("w", encoding="utf-8") as dst:
                    return await encode_file(engine, src, dst, opts)

    return asyncio.run(main())
