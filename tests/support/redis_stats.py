"""What a real ``redis-server`` ran, from its own counters (``INFO commandstats``): how a test
shows that a command was sent, or never was."""

from __future__ import annotations

from typing import Any

import redis


async def command_calls(redis: Any) -> dict[str, int]:
    """How many times the server ran each command since its stats were reset
    (``CONFIG RESETSTAT``; failed ones too), by lower-case name: ``{"rpush": 1, ...}``."""
    return by_command(await redis.info("commandstats"))


def command_calls_at(url: str) -> dict[str, int]:
    """:func:`command_calls` of the server at ``url``, over a connection of its own (for a test
    that ran a command line against it)."""
    client = redis.Redis.from_url(url)
    try:
        stats: dict[str, Any] = client.info("commandstats")  # type: ignore[assignment]
    finally:
        client.close()
    return by_command(stats)


def by_command(stats: dict[str, Any]) -> dict[str, int]:
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}
