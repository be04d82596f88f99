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

OCR is split, not bounded: a file's text layer is one request, then each page to OCR
(``ocr_pass.py``) is a request of its own under the same caps (a page past ``timeout_s`` is that
page's ``parse_timeout``; the file's other pages land). A file has at most ``workers`` pages in
children at once and queues for a child again after each, in arrival order with every other
file's requests, so a 500-page scan holds a child for one page at a time and other jobs' files
get theirs in between. A child keeps the file of its last request: a file's next page is sent
to it without the bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import msgpack

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.blocks import Block, ParsedDocument
from poolq.worker.parse.child import HEADER
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.ocr_engine import missing as ocr_missing
from poolq.worker.parse.ocr_pass import PageWork, finish, merge, pages_to_ocr

DEFAULT_PARSE_WORKERS = max(1, min(4, (os.cpu_count() or 2) // 2))
# the module children run (``python -m``): a deployment may point it at its own wrapper
CHILD_MODULE = "poolq.worker.parse.child"


class _Child:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.holding: object = None  # the file of its last request (its bytes object)

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

    async def parse(
        self, data: bytes, name: str = "", on_page: Callable[[], None] | None = None
    ) -> ParsedDocument:
        """``data`` parsed in children, its pages without text OCR'd one request each;
        :class:`ParseError` for the file's problem. ``on_page()``: after each page OCR'd."""
        limits = asdict(self.limits)
        doc = ParsedDocument.from_wire(
            await self._call({"name": name, "data": data, "limits": limits}, data, "this file")
        )
        why = ocr_missing()
        todo = pages_to_ocr(doc, self.limits.ocr, why)
        read: dict[int, list[Block]] = {}
        errors: list[tuple[int, ErrorCode, str]] = []
        room = asyncio.Semaphore(self.workers)

        async def one(work: PageWork) -> None:
            request = {"ocr": [work[0], list(work[1])], "mime": doc.mime, "limits": limits}
            async with room:
                try:
                    reply = await self._call(request, data, "this page")
                except ParseError as e:
                    errors.append((work[0], e.code, e.message))
                    return
            raw = ParsedDocument.from_wire({"mime": doc.mime, **reply})
            read[work[0]] = raw.blocks
            if on_page is not None:
                on_page()

        await asyncio.gather(*(one(w) for w in todo))
        return finish(merge(doc, read, sorted(errors)), self.limits.ocr, why)

    async def _call(self, request: dict[str, Any], data: bytes, what: str) -> dict[str, Any]:
        """One request answered by a free child (``data`` sent unless it holds it already)."""
        idle = self._queue()
        child = await idle.get()
        try:
            if child is None:
                child = await self._start()
            if child.holding is data and "ocr" in request:
                request = {k: v for k, v in request.items() if k != "data"}
            else:
                request = {**request, "data": data}
            body = msgpack.packb(request, use_bin_type=True)
            child.holding = None
            reply = await asyncio.wait_for(
                child.ask(HEADER.pack(len(body)) + body), self.limits.timeout_s
            )
            child.holding = data
        except TimeoutError:
            await self._drop(child)
            child = None
            raise ParseError(
                ErrorCode.PARSE_TIMEOUT,
                f"parsing {what} took longer than the limit of {self.limits.timeout_s:g}s "
                "(--parse-timeout); the parser was stopped",
            ) from None
        except (asyncio.IncompleteReadError, BrokenPipeError, ConnectionResetError):
            why = await self._death(child)
            child = None
            raise ParseError(ErrorCode.CORRUPT, f"the parser crashed on {what} ({why})") from None
        except BaseException:
            await self._drop(child)
            child = None
            raise
        finally:
            idle.put_nowait(child)
        if "ok" in reply:
            ok = reply["ok"]
            assert isinstance(ok, dict)
            return ok
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
