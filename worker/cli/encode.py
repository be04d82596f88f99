"""``poolq encode``: encode a JSONL file offline, in this process (no Redis, no Qdrant)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from poolq.worker.cli.app import app
from poolq.worker.cli.options import fail, model_path, setting_option

# engine/checkpoints/description.py PRECISIONS, spelled out here: this module must not import the engine
DTYPES = ("auto", "float32", "bfloat16", "float16", "int8")
# the settings `poolq encode` reads (file: POOLQ_CONFIG's [worker] table; environment; flags)
ENCODE_SETTINGS = ("backend", "threads", "device", "max_batch_tokens", "auto_bf16", "cache_dir")
QUALITY_EXIT = 3  # --report-quality: an int8-vs-float32 figure fell below its floor


@app.command()
def encode(
    input_path: Path = typer.Argument(
        ...,
        metavar="INPUT.jsonl",
        help='Lines of {"id": ..., "text": ...}; with --task score, {"id": ..., "query": ..., '
        '"text": ...} pairs.',
    ),
    model: str = typer.Option(
        ..., "--model", help="Model folder, hub id or bundled name (bundled:all-minilm-l6-v2)."
    ),
    task: list[str] = typer.Option(
        ["embed"],
        "--task",
        help="embed, sparse, token_embed or classify; repeat for several. score (alone): each "
        'pair\'s relevance from a cross-encoder or an LLM reranker, written as {"id", "score"}.',
    ),
    dimensions: int | None = typer.Option(
        None, "--dimensions", help="Matryoshka truncation of embed vectors."
    ),
    no_normalize: bool = typer.Option(
        False, "--no-normalize", help="Return raw (unnormalised) embed/token_embed vectors."
    ),
    dtype: str | None = typer.Option(
        None,
        "--dtype",
        help="auto, float32, bfloat16, float16 or int8 (default: float32 on CPU, bf16/fp16 on "
        "CUDA). auto: bf16 only on CPUs with native bf16 (avx512_bf16/AMX), else float32. int8: "
        "CPU int8 linear layers, refused if a quality gate on built-in texts fails.",
    ),
    report_quality: bool = typer.Option(
        False,
        "--report-quality",
        help="With --dtype int8: also encode in float32 and print int8-vs-float32 figures on "
        f"this file (stderr); exit {QUALITY_EXIT} if one is below its floor.",
    ),
    backend: str | None = setting_option(
        "backend",
        help_="torch, openvino or auto: what runs the CPU forwards. openvino (poolq[openvino]): "
        "the model converted to OpenVINO, int8 with NNCF behind the same quality gate; auto: "
        "OpenVINO when installed and its outputs pass it.",
    ),
    max_batch_tokens: int | None = setting_option(
        "max_batch_tokens",
        help_="Token budget of one forward pass (unset: 2048 on CPU, 16384 on CUDA; with "
        "--backend openvino, one OpenVINO call's 8192 unless a SPLADE head is in its graph).",
    ),
    device: str | None = setting_option("device"),
    threads: int | None = setting_option("threads"),
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
    if "score" in task and len(set(task)) > 1:
        raise typer.BadParameter(
            "score reads (query, text) pairs: give it alone", param_hint="--task"
        )
    if dtype is not None and dtype not in DTYPES:
        raise typer.BadParameter(
            f"expected one of {', '.join(DTYPES)}, got {dtype!r}", param_hint="--dtype"
        )
    from poolq.worker.config.loader import load_values

    flags = {"backend": backend, "threads": threads, "device": device}
    try:
        chosen = load_values(ENCODE_SETTINGS, None, flags | {"max_batch_tokens": max_batch_tokens})
    except ValueError as exc:
        fail("encode", exc)
    backend, threads, device = chosen.get("backend"), chosen.get("threads"), chosen.get("device")
    max_batch_tokens = chosen.get("max_batch_tokens")
    from poolq.worker.engine.process_options import process_options_set

    options = {"auto_bf16": chosen.get("auto_bf16"), "cache_dir": chosen.get("cache_dir")}
    with process_options_set(backend=backend, **options):
        model = model_path("encode", model)
        from poolq.worker.runtime.encode_lines import EncodeOptions

        opts = EncodeOptions(
            tuple(dict.fromkeys(task)), dimensions, not no_normalize, not no_truncate, prompt_name
        )
        if not input_path.is_file():  # before any model work
            typer.echo(
                f"poolq encode: error: input file {str(input_path)!r} does not exist", err=True
            )
            raise typer.Exit(2)
        if backend == "openvino" and Path(model).is_dir():
            from poolq.worker.engine.openvino import prefetch
            from poolq.worker.runtime.direct_encode import direct_start

            # the cached OpenVINO model compiles on the other core while torch is imported below
            # (or, for a dense model run without torch, while its tokenizer loads)
            prefetch.start(model, "float32" if dtype is None else dtype)
            direct = direct_start(
                model, opts, dtype=dtype, device=device, report_quality=report_quality
            )
        else:
            direct = None
        try:
            if direct is not None:  # dense, cached: no torch (runtime/direct_encode.py)
                from poolq.worker.runtime.direct_encode import run_direct

                summary = run_direct(
                    direct,
                    input_path,
                    output,
                    opts,
                    threads=threads,
                    max_batch_tokens=max_batch_tokens,
                )
            else:
                from poolq.worker.runtime.offline_encode import run_encode

                summary = run_encode(
                    model,
                    input_path,
                    output,
                    opts,
                    dtype=dtype,
                    device=device,
                    max_batch_tokens=max_batch_tokens,
                    report_quality=report_quality,
                    threads=threads,
                )
        except (ValueError, FileNotFoundError) as exc:
            typer.echo(f"poolq encode: error: {exc}", err=True)
            raise typer.Exit(2) from None
        finally:
            if "poolq.worker.engine.openvino.prefetch" in sys.modules:
                from poolq.worker.engine.openvino import prefetch

                prefetch.settle()  # a compile left running would abort the exit
        from poolq.worker.cli import quick_exit

        quick_exit.request()  # the output is written and closed (cli/quick_exit.py)
        if summary.cpu is not None:
            typer.echo(f"poolq encode: {summary.cpu}", err=True)
        if summary.gate is not None:
            typer.echo(
                f"poolq encode: quality gate (built-in sample): {summary.gate.summary()}", err=True
            )
        if summary.quality is not None:
            typer.echo(f"poolq encode: this file: {summary.quality.summary()}", err=True)
        typer.echo(
            f"poolq encode: {summary.written} written, {summary.errors} skipped, {summary.truncated} truncated, "
            f"{summary.tokens} tokens",
            err=True,
        )
        if summary.errors:
            raise typer.Exit(1)
        if summary.quality is not None and not summary.quality.passed:
            raise typer.Exit(QUALITY_EXIT)
