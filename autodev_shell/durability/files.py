"""Replica files written whole and read back (SPEC C3, B13-B16): a temp file in the same
directory, fsync, rename over the target, fsync of the directory, so a reader sees the old file
or the new one, never half of one; and a versioned JSON file read back as the value it claims
to be, or a `ReplicaFileError` naming it.
"""

from __future__ import annotations

import glob
import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

from autodev_core.errors import AutodevError

FILE_VERSION: Final = 1
#: Suffix of the temp file an atomic write renames into place.
TEMP_SUFFIX: Final = ".tmp"


class ReplicaFileError(AutodevError):
    """A checkpoint or shadow file exists but cannot be read as one. Names the file."""

    def __init__(self, message: str, *, path: Path) -> None:
        self.path = path
        super().__init__(message)


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` so that a crash leaves the old file or the new one: temp file in
    the same directory, fsync, rename, fsync of the directory. Raises OSError on failure and
    leaves no temp file behind."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """`atomic_write_text` of bytes; the file gets `mode` whatever the umask (private by
    default, docs/store.md: a replica holds the thread)."""
    directory = path.parent
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=_temp_prefix(path), suffix=TEMP_SUFFIX)
    try:
        os.fchmod(fd, mode & 0o777)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def sweep_temp_files(path: Path) -> int:
    """Remove temp files a killed writer left behind while replacing `path` (a crash between
    the temp file and the rename). Call it holding the run lock, so that no live writer owns
    them. Returns how many were removed."""
    removed = 0
    prefix = _temp_prefix(path)
    for leftover in path.parent.glob(f"{glob.escape(prefix)}*{TEMP_SUFFIX}"):
        with suppress(FileNotFoundError):
            leftover.unlink()
            removed += 1
    return removed


def read_file(path: Path, cls: Any, kind: str) -> Any:
    """The value of type `cls` that the JSON file at `path` holds, or None when there is no
    file; a `ReplicaFileError` naming the file when it cannot be read as one."""
    from autodev_core.serialization import from_json

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReplicaFileError(f"The {kind} file {path} cannot be read ({exc}).",
                               path=path) from exc
    try:
        return from_json(text, cls)
    except Exception as exc:  # json and cattrs errors alike: the file is not what it claims.
        raise ReplicaFileError(
            f"The {kind} file {path} is not a valid {kind} ({type(exc).__name__}).", path=path
        ) from exc


def format_check(expected: str) -> Any:
    """An attrs validator: the file's `format` field names the kind of file it is."""
    def check(_instance: object, _attribute: object, value: str) -> None:
        if value != expected:
            raise ValueError(f"expected format {expected!r}, found {value!r}")
    return check
