"""The dead-letter list as both sides read it: jobs that failed for good (their last try, or an
error no retry can fix), kept with their arguments and error.

Stored as one Redis hash (``DEAD_LETTER_KEY``): job id -> msgpack
:class:`~poolq.wire.records.dead_letter.DeadLetter`. Workers add to it
(``worker/reliability/dead_letter.py``); ``poolq dlq list|retry|drop`` reads it and takes
entries out (``ingest/dead_letters.py``).
"""

from __future__ import annotations

from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.records.dead_letter import DeadLetter


async def entries(redis: Redis) -> list[DeadLetter]:
    """Every dead-lettered job, oldest first."""
    raw = await redis.hgetall(constants.DEAD_LETTER_KEY)  # type: ignore[misc]
    out = [DeadLetter.unpack(v) for v in raw.values()]
    return sorted(out, key=lambda e: e.failed_at)
