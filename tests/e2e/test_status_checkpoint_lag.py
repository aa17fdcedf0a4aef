"""What an operator reads about the checkpoint (SPEC B14, C6, C2): after a kill -9 between
checkpoints, `autodev status` must not call the lag "normal between syncs" (no daemon runs to
sync it; it once did); and `autodev restore` refused by a live daemon names the run by its
folder (it once said "Run 'run.db'")."""

from __future__ import annotations

from pathlib import Path

from helpers.daemons import Daemon, killed_behind, wait_for


def test_B14_the_checkpoint_line_of_a_dead_daemon_does_not_call_its_lag_normal(
        tmp_path: Path) -> None:
    d = killed_behind(tmp_path)
    lines = d.cli("status").stdout.splitlines()
    line = next(x for x in lines if x.startswith("checkpoint:"))
    assert "normal between syncs" not in line, line
    assert "no daemon is running" in line and "pending sync" in line, line


def test_B14_restore_refused_by_a_live_daemon_names_the_run(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"},
               {"default": {"post": "ok", "sleep": 0.1}})
    d.start()
    try:
        wait_for(lambda: (d.run_dir / "run.db").exists(), "the store")
        done = d.cli("restore")
    finally:
        d.stop()
    assert done.returncode == 2
    assert "'run.db'" not in done.stderr, done.stderr
    assert f"Run {str(d.run_dir)!r} is already driven" in done.stderr, done.stderr
