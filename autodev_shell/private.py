"""A run's files are private by default (docs/store.md, "Permissions"): the run folder is 0700 and
every file in it 0600, whatever the umask — run.db and its `-wal`/`-shm`, lanes, the log, the
checkpoint, the shadow copy, the lock and prompt files hold every prompt and post of the run.

SQLite makes a database's `-wal` and `-shm` with the database file's own permissions, so a
store created 0600 keeps its journal files 0600 too. A run folder made by an older autodev is
tightened when its daemon starts (`make_private`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

#: Mode of a run's folders and files (owner only).
PRIVATE_DIR: Final = 0o700
PRIVATE_FILE: Final = 0o600


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Make `path` and any missing parents, each made here 0700 (an existing folder is left
    as it is: `--run .` must not lock the user out of their own directory's group)."""
    target = Path(path)
    missing: list[Path] = []
    probe = target
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_DIR)
            os.chmod(folder, PRIVATE_DIR)  # mkdir's mode passes through the umask
    return target


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """`os.open(path, flags | O_CREAT)`, the file 0600 whatever the umask; returns the fd."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    except OSError:
        os.close(fd)
        raise
    return fd


def write_private_text(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` (UTF-8) to `path`, replacing what it held, the file 0600 whatever the umask:
    the small files beside a run's store (the team folder's path, the panel's port, a refused
    team edit) are the run's as much as its log is."""
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)


#: What a run folder holds of autodev's (the only entries `make_private` touches, so a `--run`
#: pointed at a folder with other files in it leaves those alone): `run.db` and everything named
#: after it (`-wal`, `-shm`, `.lock`, `.checkpoint.json`, `.shadow.json`, `.replaced-…`), the
#: log (and its `.jsonl` lines), the lanes folder, prompt files, and the small files beside them:
#: the team folder's path, a refused team edit, the panel's port, the call ledger.
RUN_FILE_PREFIXES: Final = ("run.db", "autodev.log", "prompt-", "team.path", "team-edit.txt",
                            "panel.port", "calls.jsonl")
RUN_FOLDERS: Final = ("lanes",)


def make_private(run_dir: str | os.PathLike[str]) -> None:
    """Tighten the run files in `run_dir` (made by an older autodev, or under another umask):
    each 0600, the lanes folder 0700 with its files 0600."""
    root = Path(run_dir)
    try:
        entries = list(root.iterdir())
    except OSError:
        return
    for path in entries:
        with contextlib.suppress(OSError):
            if path.is_symlink():
                continue
            if path.is_dir() and path.name in RUN_FOLDERS:
                os.chmod(path, PRIVATE_DIR)
                for child in path.iterdir():
                    if child.is_file() and not child.is_symlink():
                        os.chmod(child, PRIVATE_FILE)
            elif path.is_file() and path.name.startswith(RUN_FILE_PREFIXES):
                os.chmod(path, PRIVATE_FILE)
