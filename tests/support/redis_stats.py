"""What a real ``redis-server`` ran, from its own counters (``INFO commandstats``): how a test
shows that a command was sent, or never was."""

from __future__ import annotations

from typing import Any


async def command_calls(redis: Any) -> dict[str, int]:
    """How many times the server ran each command since its stats were reset
    (``CONFIG RESETSTAT``; failed ones too), by lower-case name: ``{"rpush": 1, ...}``."""
    stats = await redis.info("commandstats")
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}
