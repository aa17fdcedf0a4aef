"""One daemon per run (SPEC C4).

The lock is `fcntl.flock` on a lock file next to the run's database (`<db>.lock`). The kernel
drops it when the holder's last descriptor closes — on exit, on a crash, on `kill -9` — so a
dead daemon never leaves a stale lock behind, and there is no pid file to clean up by hand. The
holder writes its pid into the file only so that a refused second daemon can say who holds it.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import suppress
from pathlib import Path
from typing import Final

from autodev_core.errors import AutodevError

from .private import open_private

#: Suffix of the lock file beside the database.
LOCK_SUFFIX: Final = ".lock"


class RunLockedError(AutodevError):
    """Another live process drives this run. `pid` is the holder's, when it could be read."""

    def __init__(self, message: str, *, run: str, pid: int | None, path: Path) -> None:
        self.run = run
        self.pid = pid
        self.path = path
        super().__init__(message)


def lock_path(db_path: str | os.PathLike[str]) -> Path:
    """The lock file of the run stored at `db_path`."""
    db = Path(db_path)
    return db.with_name(db.name + LOCK_SUFFIX)


def _read_pid(fd: int) -> int | None:
    try:
        raw = os.pread(fd, 64, 0)
    except OSError:
        return None
    text = raw.decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


class RunLock:
    """Held from `acquire` until `release` (or the process ends). Use as a context manager."""

    def __init__(self, path: Path, fd: int, run: str) -> None:
        self.path = path
        self.run = run
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, db_path: str | os.PathLike[str], *, run: str = "") -> RunLock:
        """Take the run's lock without waiting, or raise `RunLockedError` naming the run and
        the pid that holds it. `run` is the run's id, used in the message."""
        path = lock_path(db_path)
        name = run or Path(db_path).name
        # A CLI the daemon spawns must not inherit (and so prolong) the lock: Python opens
        # descriptors non-inheritable already (PEP 446); O_CLOEXEC says so explicitly.
        fd = open_private(path, os.O_RDWR)  # 0600 (issue 9 item 8), close-on-exec
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            holder = f"pid {pid}" if pid is not None else "a process whose pid is not yet written"
            raise RunLockedError(
                f"Run {name!r} is already driven by another autodev daemon ({holder}); "
                f"stop it first (lock file {path}).",
                run=name, pid=pid, path=path,
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # The pid is only for messages; the flock itself is the lock.
        with suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        return cls(path, fd, name)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the lock up. The file stays: removing it could let two processes lock two
        different inodes of the same name."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with suppress(OSError):  # An empty pid after release is a courtesy only.
            os.ftruncate(fd, 0)
        os.close(fd)  # Closing the last descriptor drops the flock.

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()
