"""The start and end of a full rebuild, for folders and object-store sources alike: the new
collection is loaded with indexing deferred; its indexes are built before the switch (searches
never wait on them), then the alias points at it, and the collection it named before is dropped
unless ``keep_old``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from poolq.worker.runtime.worker_runtime import Runtime


async def start_rebuild(rt: Runtime, alias: str, target: str) -> None:
    """Create ``target`` for a rebuild of ``alias``, and drop any unfinished collection a crashed
    rebuild left (the reindex lock says no other rebuild of this alias is running)."""
    await rt.writer.create_for_rebuild(rt.schema(target))
    current = await rt.writer.resolve(alias)
    for name in await rt.writer.physical_collections(alias):
        if name not in (current, target):
            await rt.writer.drop_collection(name)


async def switch_alias(
    rt: Runtime, progress: Any, alias: str, target: str, *, keep_old: bool
) -> tuple[str | None, str | None]:
    """(the collection the alias named before, the collection dropped); ``progress`` is the
    job's reindex progress (its ``publish(force=..., state=...)``)."""
    await progress.publish(force=True, state="building indexes")
    await rt.writer.finish_build(target)
    await progress.publish(force=True, state="switching alias")
    previous = await rt.writer.point_alias(alias, target)
    rt.forget_collection(alias)
    if previous is None or keep_old:
        return previous, None
    await rt.writer.drop_collection(previous)
    return previous, previous
