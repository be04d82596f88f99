"""Zip-based files (DOCX, PPTX, EPUB) opened so that a zip bomb costs nothing.

:class:`CheckedZip` refuses a zip before inflating anything when its central directory says it
is too much: more than :data:`MAX_MEMBERS` members, declared sizes summing past
``limits.max_inflated_bytes``, or a member both over :data:`RATIO_FLOOR_BYTES` and compressed
more than :data:`MAX_RATIO` to one (real documents compress 5-30:1; zeros, 1000:1). Declared
sizes can lie, so members are then inflated by this module itself (``zlib`` on the raw
stream, in bounded steps), not by ``zipfile`` (which trusts the header): every inflated byte
counts against the limit, and a member that inflates past its declared size is a bomb too.
Over a limit: ``TOO_LARGE``. A broken zip, a member that fails its CRC or uses a method other
than stored/deflate (no document format uses others; bzip2 and LZMA cannot be bounded step by
step): ``CORRUPT``. An encrypted member: ``ENCRYPTED``.

python-docx and python-pptx open the file themselves: :func:`checked_stream` inflates every
member through the bounded reader first (discarding the bytes), then hands back the file as a
``BytesIO``, which those libraries then read knowing that no member holds a surprise.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits

MAX_MEMBERS = 10_000
MAX_RATIO = 200
RATIO_FLOOR_BYTES = 10 << 20  # a member smaller than this may compress as well as it likes
_STEP = 1 << 16  # inflated bytes per zlib call
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
               NotImplementedError, KeyError, IndexError, struct.error)  # fmt: skip


def _too_large(message: str) -> ParseError:
    return ParseError(ErrorCode.TOO_LARGE, message)


def _corrupt(message: str) -> ParseError:
    return ParseError(ErrorCode.CORRUPT, message)


class CheckedZip:
    """``data`` (a whole zip file) opened and checked; raises :class:`ParseError` as the
    module says. ``what`` names the format in messages ("DOCX"). Members are read with
    :meth:`read`, whose inflated bytes, all calls together, stay within the limit."""

    def __init__(self, data: bytes, limits: ParseLimits, what: str = "zip file") -> None:
        self.what = what
        self.limits = limits
        self._data = data
        self._inflated = 0
        if not data:
            raise _corrupt(f"an empty file (0 bytes), not a {what}")
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self._zip.infolist()
        except _ZIP_ERRORS as e:
            raise _corrupt(f"not a readable {what}: not a valid zip archive ({e})") from e
        if len(infos) > MAX_MEMBERS:
            raise _too_large(f"{len(infos)} members in the zip, over the limit of {MAX_MEMBERS}")
        declared = sum(i.file_size for i in infos)
        if declared > limits.max_inflated_bytes:
            raise _too_large(
                f"its members inflate to {declared} bytes, over the limit of "
                f"{limits.max_inflated_bytes} bytes"
            )
        for info in infos:
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > RATIO_FLOOR_BYTES and ratio > MAX_RATIO:
                raise _too_large(
                    f"member {info.filename!r} is compressed {ratio:.0f}:1 "
                    f"({info.file_size} bytes inflated): a zip bomb"
                )
        self._infos = {i.filename: i for i in infos}

    def names(self) -> list[str]:
        """The members' names, in the archive's order."""
        return list(self._infos)

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    def read(self, name: str) -> bytes:
        """Member ``name`` inflated, within the limit (see the module). Missing: CORRUPT."""
        info = self._infos.get(name)
        if info is None:
            raise _corrupt(f"not a readable {self.what}: no member {name!r}")
        return b"".join(self._inflate(info))

    def verify(self) -> None:
        """Every member inflated (and dropped) through the bounded reader."""
        for info in self._infos.values():
            for _ in self._inflate(info):
                pass

    def _raw(self, info: zipfile.ZipInfo) -> memoryview:
        """The member's compressed bytes, found through its local header."""
        at = info.header_offset
        try:
            fields = _LOCAL_HEADER.unpack_from(self._data, at)
        except struct.error as e:
            raise _corrupt(f"not a readable {self.what}: truncated zip ({e})") from e
        if fields[0] != b"PK\x03\x04":
            raise _corrupt(f"not a readable {self.what}: bad zip header for {info.filename!r}")
        start = at + _LOCAL_HEADER.size + fields[9] + fields[10]
        end = start + info.compress_size
        if end > len(self._data):
            raise _corrupt(f"not a readable {self.what}: member {info.filename!r} is truncated")
        return memoryview(self._data)[start:end]

    def _count(self, n: int, info: zipfile.ZipInfo, seen: int) -> None:
        self._inflated += n
        if self._inflated > self.limits.max_inflated_bytes:
            raise _too_large(
                f"its members inflate past the limit of {self.limits.max_inflated_bytes} bytes "
                f"(at {info.filename!r})"
            )
        if seen > info.file_size:
            raise _too_large(
                f"member {info.filename!r} inflates past the {info.file_size} bytes its header "
                "declares: a zip bomb"
            )

    def _inflate(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        """Yields the member's inflated bytes in steps of at most :data:`_STEP`."""
        if info.flag_bits & 0x1:
            raise ParseError(ErrorCode.ENCRYPTED, f"member {info.filename!r} is encrypted")
        raw = self._raw(info)
        crc, seen = 0, 0
        if info.compress_type == zipfile.ZIP_STORED:
            for at in range(0, len(raw), _STEP):
                part = bytes(raw[at : at + _STEP])
                seen += len(part)
                self._count(len(part), info, seen)
                crc = zlib.crc32(part, crc)
                yield part
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            inflater = zlib.decompressobj(-15)
            pending: bytes | memoryview = raw
            try:
                while True:
                    part = inflater.decompress(pending, _STEP)
                    pending = inflater.unconsumed_tail
                    if part:
                        seen += len(part)
                        self._count(len(part), info, seen)
                        crc = zlib.crc32(part, crc)
                        yield part
                    if inflater.eof or (not pending and not part):
                        break
            except zlib.error as e:
                raise _corrupt(f"not a readable {self.what}: {info.filename!r}: {e}") from e
        else:
            raise _corrupt(
                f"not a readable {self.what}: member {info.filename!r} uses zip compression "
                f"method {info.compress_type} (only stored and deflate are allowed)"
            )
        if seen != info.file_size or crc != info.CRC:
            raise _corrupt(f"not a readable {self.what}: member {info.filename!r} is damaged")

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> CheckedZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def checked_stream(data: bytes, limits: ParseLimits, what: str) -> io.BytesIO:
    """``data`` as a file for python-docx / python-pptx, once every member has inflated within
    the limit (:meth:`CheckedZip.verify`)."""
    with CheckedZip(data, limits, what) as zf:
        zf.verify()
    return io.BytesIO(data)
