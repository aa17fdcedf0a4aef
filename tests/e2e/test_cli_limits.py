"""`autodev limits` on a real daemon (docs/cli.md, "See and undo a limit"): the list names
each limit's engine, until when, from which notice and whose it is; `autodev limits clear
ENGINE` goes through the control queue as `autodev say` does, the daemon writes its line and
the turn starts on the engine at once (A18, A23: no restart needed). Real processes, real
SQLite, stand-in CLIs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from helpers.daemons import Daemon, wait_for

from autodev_shell.store.run_store import RunStore


def test_limits_lists_a_limit_and_clear_lifts_it_for_the_waiting_run(tmp_path: Path) -> None:
    resets = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=5)
    d = Daemon(tmp_path, {"ana": "claude"}, {
        "claude": [{"kind": "limit", "resets_at": int(resets.timestamp())}],
        "default": {"post": "back on claude"},
    })
    d.start()
    try:
        wait_for(lambda: d.status() == "rate_limited", "the five-hour limit wait")
        listed = d.cli("limits")
        assert listed.returncode == 0, listed.stderr
        line, = listed.stdout.splitlines()
        assert line.startswith("claude  limited until ")
        assert "(in 4h5" in line or "(in 5h00m)" in line
        assert line.endswith("; from the notice seen at " + line.split("seen at ")[1])
        assert "; this run's own" in line
        facts = json.loads(d.cli("limits", "--json").stdout)
        assert [(f["kind"], f["engine"], f["read"], f["shared"]) for f in facts] == [
            ("limit", "claude", True, False)]
        assert datetime.fromisoformat(facts[0]["until"]) == resets

        done = d.cli("limits", "clear", "claude")
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"clear claude: queued for the run at {d.run_dir}\n"
        wait_for(lambda: any(who == "ana" for _, who, _ in d.thread()), "ana's post on claude")
        # The wait ended at once (within the poll, not five hours) and in this daemon: its
        # second call was claude's next answer. A team of one goes on to its next turn at once,
        # so a third call may already have started.
        assert [c["answer"] for c in d.calls()[:2]] == ["0", "default"]
        assert d.calls()[1]["cli"] == "claude"
        log = (d.run_dir / "autodev.log").read_text(encoding="utf-8")
        assert "claude limit cleared by hand — back for everyone on it" in log
        assert d.cli("limits").stdout == (
            "no limits and no outages: every engine of the run is free\n")
        store = RunStore.open(d.run_dir / "run.db", check=False)
        try:
            assert not store.pending_controls()  # acknowledged: taken with its step
        finally:
            store.close()
    finally:
        d.stop()


def test_limits_clear_refuses_a_malformed_engine_in_one_line(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, {"default": {"post": "ok"}})
    d.start()
    try:
        wait_for(lambda: d.thread(), "a post")
        done = d.cli("limits", "clear", "gemini")
        assert done.returncode != 0
        err = done.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert "gemini" in err and "unknown provider" in err
    finally:
        d.stop()


def test_a_limit_lifted_at_its_reset_is_a_line_for_everyone_on_it(tmp_path: Path) -> None:
    """A team of one on claude alone: no chain, so the core writes no `limit lifted` line; the
    log still says when claude came back (docs/loop.md, The daemon's own lines)."""
    # The reset is 3 s after the call starts, not after the test does: a loaded machine may take
    # longer than that to start the daemon, and a reset already past when claude prints it is
    # not this test's case.
    d = Daemon(tmp_path, {"ana": "claude"}, {
        "claude": [{"kind": "limit", "resets_in": 3}],
        "default": {"post": "back"},
    })
    d.start()
    try:
        wait_for(lambda: any(who == "ana" for _, who, _ in d.thread()), "ana's post at the reset")
    finally:
        d.stop()
    lines = [line.split(" ", 1)[1] for line in
             (d.run_dir / "autodev.log").read_text(encoding="utf-8").splitlines()]
    lifted = "claude limit lifted at its reset — back for everyone on it"
    assert lines.count(lifted) == 1
    assert lines.index(lifted) < lines.index("ana posted via claude")
