"""C6 with the real daemon: `pause` during a call, a limit wait or a failure backoff, then
`resume`, goes on with the owed turn (A33) — it never ends the run; `stop`, then a new
`autodev run` on the same run, starts the owed turn again. Real processes, real SQLite,
stand-in CLIs."""

from __future__ import annotations

from pathlib import Path

from helpers.daemons import SLOW_FIRST_CLAUDE, Daemon, wait_for


def test_A33_pause_during_a_call_then_resume_starts_the_owed_turn_again(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"}, SLOW_FIRST_CLAUDE)
    d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "ana's first (slow) call")
        d.control("pause")
        # The core learns the call was cut short: paused, no call in flight.
        wait_for(lambda: (s := d.state()) is not None and s.status == "paused" and s.call is None,
                 "the pause and the cancelled call")
        d.control("resume")
        # The owed turn (ana's) is started again, and posts; the run never stops.
        wait_for(lambda: any(k for k, who, _ in d.thread() if who == "ana"), "ana's post")
        assert [c["cli"] for c in d.calls()[:2]] == ["claude", "claude"]
        assert d.proc is not None and d.proc.poll() is None
        assert d.status() != "stopped"
    finally:
        d.stop()


def test_A33_stop_during_a_call_then_a_new_run_starts_the_owed_turn(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"}, SLOW_FIRST_CLAUDE)
    d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "ana's first (slow) call")
        d.control("stop")
        assert d.wait_exit() == 0
        assert d.status() == "stopped"
        d.start()
        wait_for(lambda: any(who == "ana" for _, who, _ in d.thread()), "ana's post")
        assert [c["cli"] for c in d.calls()[:2]] == ["claude", "claude"]
    finally:
        d.stop()


def test_A19_pause_resume_and_stop_during_a_limit_wait(tmp_path: Path) -> None:
    # A team of one whose engine is limited for hours: the run waits (A18).
    d = Daemon(tmp_path, {"ana": "claude"},
               {"claude": [{"kind": "limit"}], "default": {"post": "ok"}})
    d.start()
    try:
        wait_for(lambda: d.status() == "rate_limited", "the limit wait")
        d.control("pause")
        wait_for(lambda: d.status() == "paused", "the pause")
        d.control("resume")
        # The limit is still known: resume waits again for it, rather than ending the run.
        wait_for(lambda: d.status() == "rate_limited", "the wait again after resume")
        assert d.proc is not None and d.proc.poll() is None
        d.control("stop")
        assert d.wait_exit() == 0
        assert d.status() == "stopped"
        # A new daemon forgets the limit (A25) and calls again: the answer now is a post.
        d.start()
        wait_for(lambda: any(who == "ana" for _, who, _ in d.thread()), "ana's post")
    finally:
        d.stop()


def test_A29_pause_and_resume_during_a_failure_backoff(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"},
               {"claude": [{"kind": "crash"}, {"kind": "crash"}], "default": {"post": "ok"}})
    d.start()
    try:
        # After the second failure the run waits a minute (A28).
        wait_for(lambda: len(d.calls()) == 2 and d.status() == "backing_off", "the backoff")
        d.control("pause")
        wait_for(lambda: d.status() == "paused", "the pause")
        d.control("resume")
        # Resume tries again at once (A29: "resume to try again"), and the call posts.
        wait_for(lambda: any(who == "ana" for _, who, _ in d.thread()), "ana's post")
        assert d.status() != "stopped"
    finally:
        d.stop()
