"""A layout-1 store written by a real daemon, brought forward by today's daemon under an
operator's controls and a kill -9 (store layout 2, docs/performance.md row 4; C6's exactly-once).

`tests/fixtures/store_v1_daemon/run.db` was left by `autodev demo` on the code of layout 1 (see
the README beside it). Today's daemon opens it, migrates it in its first commit, and meanwhile
an operator says things (odd and huge texts too), pauses, resumes, kills the daemon with -9 and
starts it again. Every acknowledged message reaches the thread exactly once, the old thread is
kept as it was, and the store ends on layout 2 (B1-B8: its marker confirms the last revision).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from helpers.daemons import WAIT, Daemon, wait_for

FIXTURE = Path(__file__).parents[1] / "fixtures" / "store_v1_daemon" / "run.db"
MEMBERS = {"ana": "claude", "rui": "codex", "eva": "agy"}


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


def _marker_kind(db: Path) -> str:
    (kind,) = _rows(db, "SELECT type FROM sqlite_master WHERE name = 'commit_marker'")[0]
    return str(kind)


def _start(d: Daemon) -> subprocess.Popen[bytes]:
    # The fixture's run is `demo`, not the team folder's name: name it, as an operator would.
    d.proc = subprocess.Popen(
        [sys.executable, "-m", "autodev_shell.cli", "run", str(d.team), "--run",
         str(d.run_dir), "--thread", "demo"],
        env=d.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    return d.proc


def _say_from_stdin(d: Daemon, text: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "autodev_shell.cli", "say", "-", "--run", str(d.run_dir)],
        input=text, capture_output=True, text=True, timeout=120, env=d.env)
    assert done.returncode == 0, done.stderr


def _said(d: Daemon, text: str) -> int:
    return sum(1 for _, who, body in d.thread() if who == "user" and body == text)


def test_B1_a_daemon_written_layout_1_store_is_brought_forward_under_controls_and_kill9(
    tmp_path: Path,
) -> None:
    d = Daemon(tmp_path, MEMBERS, {"default": {"post": "ok", "sleep": 0.3}})
    d.run_dir.mkdir()
    db = d.run_dir / "run.db"
    shutil.copyfile(FIXTURE, db)
    assert _marker_kind(db) == "table"  # layout 1, as the old daemon left it
    old_thread = _rows(db, "SELECT post_key, participant, text FROM posts ORDER BY seq")
    (old_revision,) = _rows(db, "SELECT revision FROM run_state")[0]
    assert len(old_thread) == 39 and old_revision == 49

    messages = ["plain", "ünïcødé ✓ 你好 \u200b", "tabs\tand\nnew lines\r\nend", "x" * 200_000,
                "after resume", "before the kill", "after the restart"]
    _start(d)
    try:
        wait_for(lambda: _marker_kind(db) == "view", "the first commit (it migrates)")
        for text in messages[:3]:
            d.control("say", text)
        _say_from_stdin(d, messages[3])  # over one argument's 128 KiB: `say -`
        d.control("pause")
        wait_for(lambda: d.status() == "paused", "the pause")
        d.control("resume")
        wait_for(lambda: d.status() == "running", "the resume")
        d.control("say", messages[4])
        d.control("say", messages[5])
        d.kill9()
        _start(d)
        d.control("say", messages[6])
        wait_for(lambda: all(_said(d, m) for m in messages), "every message in the thread",
                 seconds=WAIT * 2)
    finally:
        d.stop()

    assert d.proc is not None and d.proc.returncode == 0
    assert {m: _said(d, m) for m in messages} == {m: 1 for m in messages}
    new_thread = _rows(db, "SELECT post_key, participant, text FROM posts ORDER BY seq")
    assert new_thread[: len(old_thread)] == old_thread
    assert _marker_kind(db) == "view"
    revision, marker_run, marker = _rows(
        db, "SELECT revision, marker_run_id, marker_revision FROM run_state")[0]
    assert marker_run == "demo" and marker == revision
    assert isinstance(revision, int) and revision > old_revision
    status = d.cli("status", "--json")
    assert status.returncode == 0, status.stderr
    assert "Traceback" not in status.stderr
    assert '"stopped"' in status.stdout
    assert f"revision {revision} confirmed by sqlite" in status.stdout
