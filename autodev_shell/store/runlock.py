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

from ..private import open_private

#: Suffix of the lock file beside the database.
LOCK_SUFFIX: Final = ".lock"
#: Overrides where the run-path locks live (default: $XDG_RUNTIME_DIR/autodev, else
#: <tmp>/autodev-<uid>).
LOCK_DIR_ENV: Final = "AUTODEV_LOCK_DIR"


def path_lock_dir() -> Path:
    """Where the second lock of every run lives: outside every run folder, so a run folder
    removed and made again under a live daemon is still refused to a second daemon (C4)."""
    chosen = os.environ.get(LOCK_DIR_ENV)
    if chosen:
        return Path(chosen)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "autodev"
    import tempfile  # here, not at import: `autodev status` never takes a lock (cold start)

    return Path(tempfile.gettempdir()) / f"autodev-{os.getuid()}"


def path_lock(db_path: str | os.PathLike[str]) -> Path:
    """The run-path lock of the run stored at `db_path`: keyed by the database's resolved
    path, so the same run folder has the same lock whatever became of the folder itself."""
    import hashlib

    key = hashlib.sha256(str(Path(db_path).resolve()).encode("utf-8", "surrogateescape"))
    return path_lock_dir() / f"run-{key.hexdigest()[:40]}.lock"


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


def daemon_holding(db_path: str | os.PathLike[str]) -> tuple[bool, int | None]:
    """Whether a live daemon holds the run's lock now, and the pid written in the lock file
    (the last holder's, when a kill -9 left it there). Asks the kernel without taking the lock
    for more than an instant: a shared, non-blocking `flock`, released at once (a daemon starting
    in that very instant is refused and can simply be started again)."""
    path = lock_path(db_path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False, None
    try:
        pid = _read_pid(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True, pid
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False, pid
    finally:
        os.close(fd)


class RunLock:
    """Held from `acquire` until `release` (or the process ends). Use as a context manager."""

    def __init__(self, path: Path, fd: int, run: str, outer: RunLock | None = None) -> None:
        self.path = path
        self.run = run
        self._fd: int | None = fd
        self._outer = outer

    @classmethod
    def acquire(cls, db_path: str | os.PathLike[str], *, run: str = "") -> RunLock:
        """Take the run's locks without waiting, or raise `RunLockedError` naming the run and
        the pid that holds it. `run` is the run's id, used in the message.

        Two locks: the run-path lock (`path_lock`, outside the run folder) first, then the lock
        file beside the database. A daemon whose run folder was removed keeps the first until
        it exits, so a second daemon on a folder made again at the same path is refused."""
        outer_dir = path_lock_dir()
        outer: RunLock | None = None
        try:
            outer_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            outer = cls._take(path_lock(db_path), run or Path(db_path).name)
        except RunLockedError:
            raise
        except OSError:
            outer = None  # no writable place outside the folder: the folder's lock alone
        try:
            inner = cls._take(lock_path(db_path), run or Path(db_path).name)
        except BaseException:
            if outer is not None:
                outer.release()
            raise
        inner._outer = outer
        return inner

    @classmethod
    def _take(cls, path: Path, name: str) -> RunLock:
        # A CLI the daemon spawns must not inherit (and so prolong) the lock: Python opens
        # descriptors non-inheritable already (PEP 446); O_CLOEXEC says so explicitly.
        fd = open_private(path, os.O_RDWR)  # 0600 (docs/store.md), close-on-exec
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
        if fd is not None:
            with suppress(OSError):  # An empty pid after release is a courtesy only.
                os.ftruncate(fd, 0)
            os.close(fd)  # Closing the last descriptor drops the flock.
        outer, self._outer = self._outer, None
        if outer is not None:
            outer.release()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()
