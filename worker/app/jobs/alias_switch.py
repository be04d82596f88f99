"""The end of a full rebuild, for folders and object-store sources alike: the new collection's
indexes are built before the switch (searches never wait on them), then the alias points at
it, and the collection it named before is dropped unless ``keep_old``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from poolq.worker.runtime.worker_runtime import Runtime


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
