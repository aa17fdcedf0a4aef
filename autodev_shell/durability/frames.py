"""The checkpoint file's frames (SPEC B13-B15, C3; docs/store.md, "The checkpoint file").

A checkpoint of version 2 is a sequence of frames. Each frame is one line of JSON, its head,
then its payload and a newline:

    {"format":"autodev-checkpoint","version":2,"kind":"base","revision":40,
     "written_at":"2026-12-01T09:00:00+00:00","bytes":81234,"crc32":305419896}\\n
    <payload: `bytes` bytes of JSON>\\n

The first frame is the base (`kind` "base": the whole snapshot); each later one is a record
(`kind` "append": the posts after the previous frame's and the run state). A head holds what
`autodev status` shows (revision and time), so status reads heads only: a few hundred bytes a
frame, never a payload. A reader reads the base and every complete record; the file's last
frame, when it is incomplete or its payload does not match its checksum, is a torn append (a
kill or a full disk in the middle of one) and is ignored. Anything else that does not read as
a frame is damage, named by its frame number and byte.

Read with json, os and zlib alone: `autodev status` loads no attrs (docs/performance.md).
"""

from __future__ import annotations

import json
import os
import zlib
from datetime import datetime
from typing import Final, NamedTuple

FORMAT: Final = "autodev-checkpoint"
VERSION: Final = 2
BASE: Final = "base"
APPEND: Final = "append"
#: The longest head a reader accepts (a head is about 150 bytes).
HEAD_MAX: Final = 1024
#: What a reader asks for first when it reads a head.
_HEAD_READ: Final = 256


class Frame(NamedTuple):
    """One complete frame: where it starts (`offset`), its payload (`payload_at`, `length`)
    and where the next frame starts (`end`)."""

    number: int
    kind: str
    revision: int
    written_at: str
    offset: int
    payload_at: int
    length: int
    crc32: int

    @property
    def end(self) -> int:
        return self.payload_at + self.length + 1


class FrameDamage(ValueError):
    """A frame that is neither complete nor a torn last append: the file is damaged there."""

    def __init__(self, message: str, *, index: int, offset: int) -> None:
        self.index = index
        self.offset = offset
        super().__init__(message)


class NotFramed(ValueError):
    """The file does not start with a version 2 head (an older checkpoint, or not one)."""

    def __init__(self, message: str, *, version: object = None) -> None:
        self.version = version
        super().__init__(message)


def encode_frame(kind: str, revision: int, written_at: str, payload: bytes) -> bytes:
    """One frame's bytes: its head line, `payload` (JSON text without a newline) and one."""
    head = json.dumps(
        {"format": FORMAT, "version": VERSION, "kind": kind, "revision": revision,
         "written_at": written_at, "bytes": len(payload), "crc32": zlib.crc32(payload)},
        ensure_ascii=True, separators=(",", ":"))
    return b"".join((head.encode("ascii"), b"\n", payload, b"\n"))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_head(line: bytes) -> tuple[str, int, str, int, int]:
    """(kind, revision, written_at, length, crc32) of one head line; ValueError when it is not
    a version 2 head (`NotFramed` when it is no head at all)."""
    try:
        head = json.loads(line)
    except ValueError as exc:
        raise NotFramed("not a frame head") from exc
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise NotFramed("not an autodev checkpoint head")
    version = head.get("version")
    if version != VERSION:
        raise NotFramed(f"version {version!r}", version=version)
    kind, revision, written_at = head.get("kind"), head.get("revision"), head.get("written_at")
    length, crc = head.get("bytes"), head.get("crc32")
    if (kind not in (BASE, APPEND) or not _is_int(revision) or not _is_int(length)
            or not _is_int(crc) or not isinstance(written_at, str)):
        raise ValueError("a head without its kind, revision, written_at, bytes and crc32")
    assert isinstance(revision, int) and isinstance(length, int) and isinstance(crc, int)
    if revision < 0 or length < 0 or datetime.fromisoformat(written_at).utcoffset() is None:
        raise ValueError("a head with a negative count or a time without its UTC offset")
    return kind, revision, written_at, length, crc


def _nothing_after(fd: int, offset: int, size: int) -> bool:
    """Whether the file holds only NUL bytes from `offset` on (space a crash allotted to an
    append whose bytes never reached the disk)."""
    while offset < size:
        chunk = os.pread(fd, min(1 << 16, size - offset), offset)
        if not chunk or chunk.strip(b"\0"):
            return not chunk
        offset += len(chunk)
    return True


def _head_at(fd: int, offset: int, size: int) -> tuple[bytes | None, int]:
    """The head line starting at `offset` (without its newline) and where its payload starts;
    None when the file ends before the head's newline."""
    chunk = os.pread(fd, min(_HEAD_READ, size - offset), offset)
    newline = chunk.find(b"\n")
    if newline < 0 and len(chunk) < size - offset:
        chunk = os.pread(fd, min(HEAD_MAX + 1, size - offset), offset)
        newline = chunk.find(b"\n")
    if newline < 0:
        if len(chunk) > HEAD_MAX:
            raise ValueError(f"a head longer than {HEAD_MAX} bytes")
        return None, 0
    return chunk[:newline], offset + newline + 1


def scan(fd: int, size: int, *, verify: bool) -> tuple[list[Frame], int]:
    """The complete frames of the file open at `fd` (`size` bytes), in order, and where the
    complete part ends (`size`, or where a torn last append starts).

    With `verify`, each payload is read and checked against its checksum; without it (what
    `autodev status` does) only heads and the byte that closes each frame are read. Raises
    `NotFramed` when the first frame is not a version 2 head, `FrameDamage` for damage that is
    not a torn last append.
    """
    if size <= 0:
        raise NotFramed("an empty file")
    frames: list[Frame] = []
    offset = 0
    while offset < size:
        index = len(frames)
        try:
            line, payload_at = _head_at(fd, offset, size)
            if line is None:
                if index == 0:
                    raise NotFramed("no head line")
                return frames, offset  # torn: the file ends inside the head
            kind, revision, written_at, length, crc = parse_head(line)
        except NotFramed:
            if index == 0:
                raise
            if _nothing_after(fd, offset, size):
                return frames, offset
            raise _damage(index, offset, "has no readable head") from None
        except ValueError as exc:
            if index == 0:
                raise NotFramed(str(exc)) from None
            if _nothing_after(fd, offset, size):
                return frames, offset
            raise _damage(index, offset, f"has a damaged head ({exc})") from None
        frame = Frame(index, kind, revision, written_at, offset, payload_at, length, crc)
        last = frame.end >= size
        if frame.end > size:  # torn: the file ends inside the payload
            if index == 0:
                raise _damage(index, offset, "is incomplete")
            return frames, offset
        if verify:
            body = os.pread(fd, length + 1, payload_at)
            if body[-1:] != b"\n" or zlib.crc32(body[:-1]) != crc:
                if last and index > 0:
                    return frames, offset
                raise _damage(index, offset, "does not match its checksum")
        elif os.pread(fd, 1, frame.end - 1) != b"\n":
            if last and index > 0:
                return frames, offset
            raise _damage(index, offset, "does not end where its head says")
        if (kind == BASE) != (index == 0):
            raise _damage(index, offset, f"is a {kind!r} frame in the wrong place")
        if frames and revision < frames[-1].revision:
            raise _damage(index, offset,
                          f"goes back to revision {revision} from {frames[-1].revision}")
        frames.append(frame)
        offset = frame.end
    return frames, offset


def _damage(index: int, offset: int, what: str) -> FrameDamage:
    name = "the base" if index == 0 else f"record {index}"
    return FrameDamage(f"{name} (frame {index + 1}, at byte {offset}) {what}",
                       index=index, offset=offset)
