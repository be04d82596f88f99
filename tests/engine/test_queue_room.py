"""Room in an engine's queue (``queue_room.py``): callers wait in lane order, queries never."""

import asyncio

from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.batching.queue_room import QueueRoom


async def test_room_goes_to_the_more_urgent_lane_first_and_queries_never_wait():
    queued = [95]
    room = QueueRoom(100, lambda: queued[0])
    room.event_loop = asyncio.get_running_loop()
    order: list[str] = []

    async def caller(lane: Lane, name: str) -> None:
        await room.admit(10, lane)
        order.append(name)
        queued[0] += 10

    bulk = asyncio.create_task(caller(Lane.BULK, "bulk"))  # first to wait
    await asyncio.sleep(0.01)
    interactive = asyncio.create_task(caller(Lane.INTERACTIVE, "interactive"))
    await asyncio.sleep(0.01)
    await asyncio.wait_for(room.admit(10**6, Lane.QUERY), 1)  # a query never waits
    assert order == []
    queued[0] = 85  # room for one caller of 10
    room.freed()
    await asyncio.sleep(0.05)
    assert order == ["interactive"]  # though bulk waited longer
    queued[0] = 0
    room.freed()
    await asyncio.wait_for(asyncio.gather(bulk, interactive), 1)
    assert order == ["interactive", "bulk"]


async def test_an_oversized_submission_enters_an_empty_queue_alone():
    queued = [0]
    room = QueueRoom(100, lambda: queued[0])
    room.event_loop = asyncio.get_running_loop()
    await asyncio.wait_for(room.admit(500, Lane.BULK), 1)
    queued[0] = 500
    waiting = asyncio.create_task(room.admit(1, Lane.BULK))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    queued[0] = 0
    room.freed()
    await asyncio.wait_for(waiting, 1)
