"""The client's settings: the client library, its commands (``enqueue``, ``status``, ``search``,
``dlq``, ``cancel``, ``reindex``) and the dashboard. Loaded with the workers' loader and precedence
(config file ``[worker]`` table, then ``POOLQ_*`` variables, then flags); the standard library and
``wire/`` only, so application code that enqueues loads no worker code with it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from poolq.wire.connection import check_redis_url
from poolq.worker.config.loader import check_fields, config_file, load_values
from poolq.worker.config.variables import default

CLIENT_NAMES = ("redis_url", "redis_outage_limit_s", "dashboard_token")


@dataclass(frozen=True)
class ClientSettings:
    """Each field a setting declared in :mod:`~poolq.worker.config.variables`."""

    redis_url: str = default("redis_url")
    redis_outage_limit_s: float = default("redis_outage_limit_s")
    dashboard_token: str | None = default("dashboard_token")

    def __post_init__(self) -> None:
        check_fields(self)


def load_client_settings(
    config: str | os.PathLike[str] | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    flag_names: Mapping[str, str] | None = None,
) -> ClientSettings:
    """A Redis URL poolq cannot connect with is a ``ValueError`` naming where it came from, before
    anything connects. Of the config file only its ``[worker]`` table is read (never the
    profile)."""
    origins: dict[str, str] = {}
    data = config_file(config, environ)
    values = load_values(CLIENT_NAMES, data, flags, environ, flag_names=flag_names, origins=origins)
    try:
        check_redis_url(values.get("redis_url", default("redis_url")))
    except ValueError as e:
        raise ValueError(f"{origins.get('redis_url', 'the default Redis URL')}: {e}") from None
    return ClientSettings(**values)
