"""The ``poolq`` Typer application: commands register themselves on :data:`app` (one module per
command in this folder). Nothing heavy is imported here or at a command module's top: client
commands (enqueue, status, search, dlq, reindex) start without torch or qdrant_client."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="poolq",
    help="Ingestion worker for vector search: Redis/arq jobs -> continuous-batching pooling models -> Qdrant.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: [worker] and poolq[openvino] print as written
)


def _version() -> str:
    from poolq.wire.version import __version__  # the one source (pyproject.toml reads it too)

    return __version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"poolq {_version()}")
        raise typer.Exit()


@app.callback()
def root(
    version_: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """poolq: pooling models behind a Redis queue, writing to Qdrant."""
