"""``GroupProgress``: a group with requests queued or in flight moves while the engine does."""

from __future__ import annotations

import asyncio
import time

from poolq.worker.engine.batching.group_progress import GroupProgress


async def test_a_call_is_pending_until_its_future_is_done_then_its_last_service_counts() -> None:
    g = GroupProgress()
    loop = asyncio.get_running_loop()
    first, second = loop.create_future(), loop.create_future()
    g.track("job", 3, first)
    g.track("job", 2, second)
    assert g.pending == {"job": 5}
    g.last_activity = time.monotonic()
    assert g.of("job") == g.last_activity, "waiting its turn: the engine's last batch counts"
    first.set_result([])
    await asyncio.sleep(0)  # done callbacks run on the next loop turn
    assert g.pending == {"job": 2}
    second.cancel()
    await asyncio.sleep(0)
    assert g.pending == {}
    assert g.of("job") is None, "nothing pending and nothing computed: no progress"
    g.served(["job"])
    assert g.of("job") is None, "a group tracked no more is not recorded"
    third = loop.create_future()
    g.track("job", 1, third)
    g.served(["job", "#call7"])
    assert g.of("job") is not None and g.served_at == {"job": g.served_at["job"]}, (
        "the tracked group is recorded, a call that named none is not"
    )
    third.set_result([])
    await asyncio.sleep(0)
    assert g.of("job") == g.served_at["job"], "done: its last service counts"
