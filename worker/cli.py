"""The ``poolq`` command line."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import typer

app = typer.Typer(
    name="poolq",
    help="Ingestion worker for vector search: Redis/arq jobs -> continuous-batching pooling models -> Qdrant.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version() -> str:
    try:
        return version("poolq")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"poolq {_version()}")
        raise typer.Exit()


@app.callback()
def main(
    version_: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """poolq: pooling models behind a Redis queue, writing to Qdrant."""


@app.command()
def encode(
    input_path: Path = typer.Argument(
        ..., metavar="INPUT.jsonl", help='Lines of {"id": ..., "text": ...}.'
    ),
    model: str = typer.Option(..., "--model", help="Model folder or hub id."),
    task: list[str] = typer.Option(
        ["embed"], "--task", help="embed, sparse, token_embed or classify; repeat for several."
    ),
    dimensions: int | None = typer.Option(
        None, "--dimensions", help="Matryoshka truncation of embed vectors."
    ),
    no_normalize: bool = typer.Option(
        False, "--no-normalize", help="Return raw (unnormalised) embed/token_embed vectors."
    ),
    dtype: str | None = typer.Option(
        None, "--dtype", help="float32 or bfloat16 (default: float32 on CPU, bf16/fp16 on CUDA)."
    ),
    max_batch_tokens: int | None = typer.Option(
        None,
        "--max-batch-tokens",
        min=1,
        help="Token budget of one forward pass (default: 2048 on CPU, 16384 on CUDA).",
    ),
    device: str | None = typer.Option(
        None, "--device", help="cpu, cuda, cuda:N (default: CUDA when present)."
    ),
    no_truncate: bool = typer.Option(
        False, "--no-truncate", help="Over-long texts are errors instead of being truncated."
    ),
    prompt_name: str | None = typer.Option(
        None, "--prompt-name", help="A prompt from the model's sentence-transformers config."
    ),
    output: Path | None = typer.Option(
        None, "-o", "--output", metavar="OUT.jsonl", help="Default: standard output."
    ),
) -> None:
    """Encode a JSONL file offline: one output line per input line, in input order."""
    from worker.encode import EncodeOptions, run_encode

    if dtype not in (None, "float32", "bfloat16", "float16"):
        raise typer.BadParameter(
            f"expected float32 or bfloat16, got {dtype!r}", param_hint="--dtype"
        )
    opts = EncodeOptions(
        tuple(dict.fromkeys(task)), dimensions, not no_normalize, not no_truncate, prompt_name
    )
    try:
        summary = run_encode(
            model,
            input_path,
            output,
            opts,
            dtype=dtype,
            device=device,
            max_batch_tokens=max_batch_tokens,
        )
    except (ValueError, FileNotFoundError) as exc:
        typer.echo(f"poolq encode: error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(
        f"poolq encode: {summary.written} written, {summary.errors} skipped, {summary.truncated} truncated, "
        f"{summary.tokens} tokens",
        err=True,
    )
    if summary.errors:
        raise typer.Exit(1)


@app.command()
def worker(
    config: Path | None = typer.Option(None, "--config", help="TOML config (env POOLQ_CONFIG)."),
    redis_url: str | None = typer.Option(None, "--redis-url", help="env POOLQ_REDIS_URL"),
    qdrant_url: str | None = typer.Option(
        None, "--qdrant-url", help="Qdrant server (env POOLQ_QDRANT_URL)."
    ),
    qdrant_path: Path | None = typer.Option(
        None, "--qdrant-path", help="Embedded Qdrant folder (env POOLQ_QDRANT_PATH)."
    ),
    qdrant_api_key: str | None = typer.Option(
        None, "--qdrant-api-key", help="API key of a Qdrant server (env POOLQ_QDRANT_API_KEY)."
    ),
    device: str | None = typer.Option(
        None, "--device", help="cpu, cuda or cuda:N (default: CUDA when present)."
    ),
    max_jobs: int | None = typer.Option(
        None, "--max-jobs", min=1, help="Concurrent jobs (default 32)."
    ),
    burst: bool = typer.Option(False, "--burst", help="Exit once the queue is empty."),
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        min=1,
        max=65535,
        help="Serve Prometheus /metrics on this port (env POOLQ_METRICS_PORT).",
    ),
    shutdown_grace_s: int | None = typer.Option(
        None,
        "--shutdown-grace",
        min=0,
        help="On SIGTERM, seconds running jobs may take to finish before they go back to the "
        "queue (default 30).",
    ),
    log_format: str = typer.Option(
        "text", "--log-format", help="text or json (one JSON object per line, with job ids)."
    ),
) -> None:
    """Run an ingestion worker: drain jobs from Redis, encode, write to Qdrant."""
    from worker.app import run_worker
    from worker.settings import load_settings

    if qdrant_url and qdrant_path:
        raise typer.BadParameter("give --qdrant-url or --qdrant-path, not both")
    from worker.logs import configure

    try:
        configure(log_format)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--log-format") from None
    try:
        settings = load_settings(
            config,
            {
                "redis_url": redis_url,
                "qdrant_url": qdrant_url,
                "qdrant_path": str(qdrant_path) if qdrant_path else None,
                "qdrant_api_key": qdrant_api_key,
                "device": device,
                "max_jobs": max_jobs,
                "metrics_port": metrics_port,
                "shutdown_grace_s": shutdown_grace_s,
            },
        )
    except ValueError as exc:
        typer.echo(f"poolq worker: error: {exc}", err=True)
        raise typer.Exit(2) from None
    run_worker(settings, burst=burst)


@app.command()
def enqueue(
    input_path: Path = typer.Argument(
        ..., metavar="INPUT", help="A JSONL file or a folder of .txt/.md files."
    ),
    collection: str = typer.Option(..., "--collection", help="Qdrant collection to write."),
    wait: bool = typer.Option(False, "--wait", help="Wait for the jobs and print a summary."),
    job_size: int = typer.Option(32, "--job-size", min=1, help="Documents per job."),
    redis_url: str | None = typer.Option(None, "--redis-url", help="env POOLQ_REDIS_URL"),
    timeout_s: float | None = typer.Option(
        None, "--timeout", help="Give up waiting after this many seconds."
    ),
) -> None:
    """Enqueue documents for ingestion (and optionally wait for them)."""
    from worker.enqueue_cli import run_enqueue

    raise typer.Exit(run_enqueue(input_path, collection, wait, job_size, redis_url, timeout_s))


@app.command()
def status(
    job_ids: list[str] = typer.Argument(
        None, metavar="[JOB_ID...]", help="Jobs to report (default: all known)."
    ),
    redis_url: str | None = typer.Option(None, "--redis-url", help="env POOLQ_REDIS_URL"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Queued, running, done and failed job counts; results of the given jobs; worker heartbeats."""
    from worker.enqueue_cli import run_status

    raise typer.Exit(run_status(job_ids or [], redis_url, as_json))


@app.command()
def reindex(
    source: Path = typer.Option(
        ..., "--source", help="A JSONL file or a folder of .txt/.md files (id = relative path)."
    ),
    collection: str = typer.Option(..., "--collection", help="Collection (alias) to reindex."),
    full: bool = typer.Option(
        False,
        "--full",
        help="Rebuild into a new collection and switch the alias to it when complete.",
    ),
    keep_old: bool = typer.Option(
        False, "--keep-old", help="With --full: keep the previous collection after the switch."
    ),
    wait: bool = typer.Option(False, "--wait", help="Wait, with progress, and print a summary."),
    redis_url: str | None = typer.Option(None, "--redis-url", help="env POOLQ_REDIS_URL"),
    timeout_s: float | None = typer.Option(
        None, "--timeout", help="Give up waiting after this many seconds."
    ),
) -> None:
    """Reindex a collection from its source now: incremental by content hash (unchanged
    documents cost nothing, removed ones are deleted), or --full."""
    from worker.reindex_cli import run_reindex_cli

    raise typer.Exit(
        run_reindex_cli(source, collection, full, keep_old, wait, redis_url, timeout_s)
    )


@app.command()
def search(
    query: str = typer.Argument(..., metavar="QUERY", help="What to search for."),
    collection: str = typer.Option(..., "--collection", help="Collection (or alias) to search."),
    mode: str | None = typer.Option(
        None,
        "--mode",
        help="dense, sparse, hybrid or rerank (default: rerank when the collection has a "
        "multi-vector, else hybrid).",
    ),
    limit: int = typer.Option(10, "--limit", min=1, max=1000, help="Number of hits."),
    filters: list[str] = typer.Option(
        [],
        "--filter",
        help="KEY=VALUE, KEY!=VALUE, KEY>N, KEY>=N, KEY<N, KEY<=N on payload fields or "
        "document metadata; repeat to require several.",
    ),
    score_threshold: float | None = typer.Option(
        None, "--score-threshold", help="Drop hits scoring below this."
    ),
    fusion: str = typer.Option("rrf", "--fusion", help="rrf or dbsf (hybrid and rerank)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON line per hit."),
    direct: bool = typer.Option(
        False,
        "--direct",
        help="Encode here and query Qdrant directly (a Qdrant server, or an embedded folder "
        "no worker holds) instead of asking a worker.",
    ),
    config: Path | None = typer.Option(None, "--config", help="TOML config (env POOLQ_CONFIG)."),
    redis_url: str | None = typer.Option(None, "--redis-url", help="env POOLQ_REDIS_URL"),
    qdrant_url: str | None = typer.Option(
        None, "--qdrant-url", help="With --direct: Qdrant server (env POOLQ_QDRANT_URL)."
    ),
    qdrant_path: Path | None = typer.Option(
        None, "--qdrant-path", help="With --direct: embedded folder (env POOLQ_QDRANT_PATH)."
    ),
    qdrant_api_key: str | None = typer.Option(
        None, "--qdrant-api-key", help="env POOLQ_QDRANT_API_KEY"
    ),
    timeout_s: float = typer.Option(
        30.0, "--timeout", help="Seconds to wait for a worker's answer."
    ),
) -> None:
    """Search a collection: a table of hits, or JSON lines with --json."""
    from worker.search_cli import run_search

    raise typer.Exit(
        run_search(
            query,
            collection,
            mode=mode,
            limit=limit,
            filters=filters,
            score_threshold=score_threshold,
            fusion=fusion,
            as_json=as_json,
            direct=direct,
            config=config,
            redis_url=redis_url,
            qdrant_url=qdrant_url,
            qdrant_path=qdrant_path,
            qdrant_api_key=qdrant_api_key,
            timeout_s=timeout_s,
        )
    )


@app.command()
def dlq(
    action: str = typer.Argument(..., metavar="list|retry|drop"),
    job_ids: list[str] = typer.Argument(None, metavar="[JOB_ID...]"),
    all_: bool = typer.Option(False, "--all", help="retry/drop: every dead-lettered job."),
    redis_url: str | None = typer.Option(None, "--redis-url", help="env POOLQ_REDIS_URL"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The dead-letter list: jobs that failed for good, with their errors. `retry` enqueues
    them again (new job ids), `drop` forgets them."""
    from worker.dlq_cli import run_dlq
    from worker.enqueue_cli import _redis_url

    raise typer.Exit(run_dlq(action, job_ids or [], all_, _redis_url(redis_url), as_json))


@app.command()
def demo() -> None:
    """Run the end-to-end demo on the bundled models."""
    from worker.demo import run_demo

    run_demo()
