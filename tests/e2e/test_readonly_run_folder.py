"""A run folder an operator can read but not write (a backup or snapshot mounted read-only, a
folder of another user): SQLite writes its index (`-shm`) beside a WAL-mode database even to
read it, so `autodev status` and `say` cannot open the store. They must say that, in one line
naming the store and the cause, exit 2 — not call a sound store corrupt and point at
`autodev restore` (C6, C3, B14)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autodev_shell.store.run_store import NewPost, RunStore

NOW = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)


@contextlib.contextmanager
def read_only_view(source: Path, where: Path) -> Iterator[Path]:
    """`source` mounted read-only at `where` (a bind mount; needs root)."""
    where.mkdir()
    bound = subprocess.run(["mount", "--bind", str(source), str(where)], capture_output=True,
                           text=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here ({bound.stderr.strip()})")
    try:
        ro = subprocess.run(["mount", "-o", "remount,ro,bind", str(where)], capture_output=True,
                            text=True)
        if ro.returncode != 0:
            pytest.skip(f"cannot remount read-only here ({ro.stderr.strip()})")
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _run_folder(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    with RunStore.open(run / "run.db", create=True, run_id="t", now=NOW) as store:
        store.commit(1, (NewPost("ana", "claude", "a post", NOW, key="k1"),), "{}",
                     persistence_state_json="{}", now=NOW)
    return run


@pytest.mark.parametrize("command", [("status",), ("status", "--json"), ("say", "hello"),
                                     ("pause",)])
def test_C6_a_read_only_run_folder_is_said_as_such_not_as_corrupt(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    run = _run_folder(tmp_path)
    with read_only_view(run, tmp_path / "view") as view:
        done = subprocess.run(
            [sys.executable, "-m", "autodev_shell.cli", *command, "--run", str(view)],
            capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(view / "run.db") in lines[0] and "read-only" in lines[0], lines[0]
    assert "corrupt" not in lines[0] and "restore" not in lines[0], lines[0]
    with RunStore.open(run / "run.db") as store:  # untouched, and sound
        assert (store.revision, store.post_count()) == (1, 1)
