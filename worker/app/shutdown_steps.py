"""The steps both workers' ``on_shutdown`` take, in this order: their background tasks
cancelled, the progress board's last tick written, and the final heartbeat (``stopped``) sent
before the runtime closes."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any

from poolq.worker.reliability.heartbeat import HeartbeatThread
from poolq.worker.runtime.job_progress import ProgressBoard


async def cancel_tasks(ctx: dict[str, Any], *names: str) -> None:
    for name in names:
        task = ctx.pop(name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def close_board(ctx: dict[str, Any]) -> None:
    board: ProgressBoard | None = ctx.pop("progress_board", None)
    if board is not None:
        await board.close()


async def final_heartbeat(ctx: dict[str, Any], rt: Any) -> None:
    """The heartbeat thread stopped after one last beat saying the worker stopped cleanly."""
    heartbeat: HeartbeatThread | None = ctx.pop("heartbeat", None)
    if heartbeat is not None:
        await asyncio.to_thread(heartbeat.stop, replace(rt.heartbeat(), stopped=True))
