"""Parsing in child processes, apart from the worker's engine and event loop.

:class:`ParsePool` keeps up to ``workers`` children (``child.py``), each parsing one file at a
time, started on first use and kept for the next file. A file's parse is bounded three ways,
and each bound costs only that file:

- **time**: past ``limits.timeout_s`` the child is killed and the file is ``parse_timeout``;
- **memory**: the child caps its own address space (``limits.memory_mb`` above its start), so
  a blow-up is ``too_large``;
- **crashes**: a child that dies (a segfault in a C library) makes the file ``corrupt``.

A killed or dead child is replaced for the next file. The hand-off is bounded: a caller waits
for a free child, so at most ``workers`` files are in children at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import asdict

import msgpack

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.blocks import ParsedDocument
from poolq.worker.parse.child import HEADER
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits

DEFAULT_PARSE_WORKERS = max(1, min(4, (os.cpu_count() or 2) // 2))
# the module children run (``python -m``): a deployment may point it at its own wrapper
CHILD_MODULE = "poolq.worker.parse.child"


class _Child:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def ask(self, frame: bytes) -> dict[str, object]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(frame)
        await self.proc.stdin.drain()
        head = await self.proc.stdout.readexactly(HEADER.size)
        (n,) = HEADER.unpack(head)
        reply = msgpack.unpackb(await self.proc.stdout.readexactly(n), raw=False)
        assert isinstance(reply, dict)
        return reply

    async def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            await self.proc.wait()


class ParsePool:
    def __init__(
        self,
        workers: int | None = None,
        limits: ParseLimits | None = None,
        module: str | None = None,
    ) -> None:
        """``workers``: children at most (None: half the CPUs, 1 to 4); ``module``: what the
        children run (the setting ``parse_child``)."""
        workers = DEFAULT_PARSE_WORKERS if workers is None else workers
        if workers < 1:
            raise ValueError(f"parse workers: expected at least 1, got {workers}")
        self.workers = workers
        self.limits = limits or ParseLimits()
        self.module = module or CHILD_MODULE
        self._idle: asyncio.Queue[_Child | None] | None = None
        self.started = 0  # children started so far (replacements included)
        self._children: set[_Child] = set()

    def _queue(self) -> asyncio.Queue[_Child | None]:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self.workers):
                self._idle.put_nowait(None)  # a slot whose child starts on first use
        return self._idle

    async def _start(self) -> _Child:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", self.module, str(self.limits.memory_mb),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )  # fmt: skip
        self.started += 1
        child = _Child(proc)
        self._children.add(child)
        return child

    async def parse(self, data: bytes, name: str = "") -> ParsedDocument:
        """``data`` parsed in a child; :class:`ParseError` for the file's problem."""
        frame_body = msgpack.packb(
            {"name": name, "data": data, "limits": asdict(self.limits)}, use_bin_type=True
        )
        frame = HEADER.pack(len(frame_body)) + frame_body
        idle = self._queue()
        child = await idle.get()
        try:
            if child is None:
                child = await self._start()
            reply = await asyncio.wait_for(child.ask(frame), self.limits.timeout_s)
        except TimeoutError:
            await self._drop(child)
            child = None
            raise ParseError(
                ErrorCode.PARSE_TIMEOUT,
                f"parsing took longer than the limit of {self.limits.timeout_s:g}s "
                "(--parse-timeout); the parser was stopped",
            ) from None
        except (asyncio.IncompleteReadError, BrokenPipeError, ConnectionResetError):
            why = await self._death(child)
            child = None
            raise ParseError(
                ErrorCode.CORRUPT, f"the parser crashed on this file ({why})"
            ) from None
        except BaseException:
            await self._drop(child)
            child = None
            raise
        finally:
            idle.put_nowait(child)
        if "ok" in reply:
            ok = reply["ok"]
            assert isinstance(ok, dict)
            return ParsedDocument.from_wire(ok)
        err = reply.get("error")
        assert isinstance(err, dict)
        raise ParseError(ErrorCode(str(err["code"])), str(err["message"]))

    async def _drop(self, child: _Child | None) -> None:
        if child is not None:
            self._children.discard(child)
            await child.kill()

    async def _death(self, child: _Child | None) -> str:
        if child is None:
            return "no child"
        self._children.discard(child)
        try:
            rc = await asyncio.wait_for(child.proc.wait(), 5)
        except TimeoutError:
            await child.kill()
            return "it stopped answering"
        if rc is not None and rc < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-rc).name}"
        return f"exit status {rc}"

    async def close(self) -> None:
        for child in list(self._children):
            await self._drop(child)
        self._idle = None
