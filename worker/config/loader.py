"""The one loader of settings: the config file's ``[worker]`` table, then ``POOLQ_*`` variables,
then flags, each over the one before, every value through one coercion (:func:`coerce`).

Every role's settings come through :func:`load_values` (or :func:`load_role` for a settings
class); no other module reads ``os.environ`` for a ``POOLQ_`` name. A value that is wrong is a
``ValueError`` on one line naming where it came from (``POOLQ_MAX_JOBS: expected an integer,
got 'many'``). The standard library only: the client uses it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from poolq.worker.config.tables import checked_table
from poolq.worker.config.variables import VARIABLES, Variable

T = TypeVar("T")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def coerce(var: Variable, value: Any, origin: str) -> Any:
    """``value`` (text from the environment or a file, or a flag's value) as ``var``'s type,
    checked against its choices and minimum; None for ``None`` or empty text (the default)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if var.type is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ValueError(f"{origin}: expected true or false, got {value!r}")
    if var.type in (int, float):
        if isinstance(value, bool):
            raise ValueError(f"{origin}: expected a number, got {value!r}")
        kind = ("an integer" if var.type is int else "a number") + (
            " of seconds" if var.unit == "s" else ""
        )
        try:
            number = var.type(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{origin}: expected {kind}, got {value!r}") from None
        if number != number or (var.type is int and isinstance(value, float) and number != value):
            raise ValueError(f"{origin}: expected {kind}, got {value!r}")  # NaN, 2.5 jobs
        if var.minimum is not None and number < var.minimum:
            raise ValueError(f"{origin}: expected {kind} >= {var.minimum:g}, got {value!r}")
        return number
    text = str(value).strip()
    if var.choices:
        text = text.lower()
        if text not in var.choices:
            raise ValueError(f"{origin}: expected one of {', '.join(var.choices)}, got {value!r}")
    return text


def config_file(
    config: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The config file's tables (``{}`` without one): ``config``, else ``POOLQ_CONFIG``. A
    file that is missing or not TOML is a ``ValueError`` naming it."""
    env = os.environ if environ is None else environ
    config = config or env.get(VARIABLES["config"].env) or None
    if not config:
        return {}
    path = Path(config)
    if not path.is_file():
        raise ValueError(f"config file {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"config file {str(path)!r}: {e}") from None


def worker_table(data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``[worker]`` table, its keys checked against the declared settings (``[engine]
    backend`` is the same setting as ``[worker] backend``)."""
    known = [n for n, v in VARIABLES.items() if v.file]
    table = dict(checked_table("config [worker]", data.get("worker") or {}, known))
    engine = checked_table("config [engine]", data.get("engine") or {}, ("backend",))
    if "backend" in engine:
        table.setdefault("backend", engine["backend"])
    return table


def load_values(
    names: Iterable[str],
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    flag_names: Mapping[str, str] | None = None,
    origins: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The settings ``names`` that something sets (a name nothing sets is left out: its
    default holds): ``config`` (a path, or the tables already read), then the environment, then
    ``flags`` (None values ignored; ``flag_names`` spells a flag for its errors). ``origins``,
    when given, is filled with where each value came from, for a later check's error."""
    env = os.environ if environ is None else environ
    data = config if isinstance(config, Mapping) else config_file(config, env)
    table = worker_table(data)
    values: dict[str, Any] = {}
    found = {} if origins is None else origins
    for name in names:
        var = VARIABLES[name]
        sources = [
            (f"config [worker] {name}", table.get(name) if var.file else None),
            (var.env, env.get(var.env)),
            ((flag_names or {}).get(name, "--" + name.replace("_", "-")), (flags or {}).get(name)),
        ]
        for origin, raw in reversed(sources):  # the last that sets it wins: the rest unread
            if (value := coerce(var, raw, origin)) is not None:
                values[name], found[name] = value, origin
                break
    return values


def load_role(
    cls: type[T],
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    **extra: Any,
) -> T:
    """A role's settings class (a dataclass whose fields are declared settings, plus
    ``extra`` ones the caller fills) loaded with :func:`load_values`."""
    assert is_dataclass(cls)
    names = [f.name for f in fields(cls) if f.name in VARIABLES]
    return cls(**load_values(names, config, flags, environ), **extra)


def check_fields(settings: Any) -> None:
    """Every declared setting among ``settings``' fields within its type, choices and minimum
    (a settings class made in code, not by the loader, is checked the same)."""
    for f in fields(settings):
        var = VARIABLES.get(f.name)
        value = getattr(settings, f.name)
        if var is None or value is None:
            continue
        if var.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, var.type) or coerce(var, value, f.name) != value:
            raise ValueError(f"{f.name}: expected {_described(var)}, got {value!r}")


def _described(var: Variable) -> str:
    if var.choices:
        return "one of " + ", ".join(var.choices)
    kind = {bool: "true or false", int: "an integer", float: "a number"}.get(var.type, "text")
    return kind if var.minimum is None else f"{kind} of at least {var.minimum:g}"
