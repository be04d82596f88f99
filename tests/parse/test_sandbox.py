"""The parse sandbox: a file that crashes, hangs or blows up the parser costs only itself. Real
child processes; a marked file makes the child's reader misbehave (``fault_child.py``)."""

from __future__ import annotations

import asyncio

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.sandbox import ParsePool

TEXT = b"A plain note about lighthouses.\n\nIts second paragraph."


@pytest.fixture
def faulty() -> str:
    """The parse children's module that hangs, crashes or blows up on marked files."""
    return "tests.parse.fault_child"


async def _code(pool: ParsePool, data: bytes) -> ErrorCode:
    with pytest.raises(ParseError) as e:
        await pool.parse(data, "x.bin")
    return e.value.code


async def test_a_good_file_is_parsed_in_a_child():
    pool = ParsePool(1)
    try:
        doc = await pool.parse(TEXT, "note.txt")
        again = await pool.parse(TEXT, "note.txt")
    finally:
        await pool.close()
    assert doc.mime == "text/plain"
    assert [b.text for b in doc.blocks] == [
        "A plain note about lighthouses.",
        "Its second paragraph.",
    ]
    assert again == doc
    assert pool.started == 1  # the child is kept for the next file


async def test_a_crash_is_corrupt_and_the_next_file_parses(faulty):
    pool = ParsePool(1, module=faulty)
    try:
        with pytest.raises(ParseError) as e:
            await pool.parse(b"CRASH", "bad.pdf")
        assert e.value.code == ErrorCode.CORRUPT
        assert "crashed" in e.value.message and "SIGSEGV" in e.value.message
        assert (await pool.parse(TEXT, "note.txt")).blocks
    finally:
        await pool.close()
    assert pool.started == 2


async def test_a_hang_is_parse_timeout_within_the_limit(faulty):
    pool = ParsePool(1, ParseLimits(timeout_s=1.5), faulty)
    try:
        assert await _code(pool, b"HANG") == ErrorCode.PARSE_TIMEOUT
        assert (await pool.parse(TEXT, "note.txt")).blocks
    finally:
        await pool.close()


async def test_a_memory_blow_up_is_too_large(faulty):
    pool = ParsePool(1, ParseLimits(memory_mb=256, timeout_s=60), faulty)
    try:
        with pytest.raises(ParseError) as e:
            await pool.parse(b"BLOWUP", "big.docx")
        assert e.value.code == ErrorCode.TOO_LARGE and "256 MB" in e.value.message
        assert (await pool.parse(TEXT, "note.txt")).blocks
    finally:
        await pool.close()


async def test_other_files_go_on_while_one_hangs(faulty):
    pool = ParsePool(2, ParseLimits(timeout_s=30), faulty)
    try:
        hang = asyncio.ensure_future(pool.parse(b"HANG", "slow.pdf"))
        docs = [await pool.parse(TEXT, f"n{i}.txt") for i in range(5)]
        assert not hang.done()  # the other child served them while the first hangs
        assert all(d.blocks for d in docs)
        with pytest.raises(ParseError):
            await hang
    finally:
        await pool.close()
