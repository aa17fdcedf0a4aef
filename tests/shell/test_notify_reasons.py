"""`notify:` (docs/notifications.md): a pause's notice names its reason (A29 `failures`, A31
`empty`, A32 `login`); every participant limited (A18) is told once per episode — until some
participant posts again; a daemon ended by a signal is told as `stopped`."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_notify import _watched

from autodev_core.engine import Engine
from autodev_core.names import LOG_KINDS, PAUSE_NEEDS, PAUSE_REASONS
from autodev_core.scheduler import Log
from autodev_shell.notify import (
    DAEMON_ENDED,
    NOTIFYING_KINDS,
    PAUSED_FOR,
    notice_of_note,
    title_of,
)

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)

PAUSES = {
    "gave-up": ("Gave up after 12 failed attempts in a row, over five hours (claude timed out); "
                "run paused — resume to try again.", "failures", "gave up after failed calls"),
    "empty-turns": ("ana ended 3 turns in a row without a post; run paused — resume to try "
                    "again.", "empty", "turns ended without a post"),
    "not-logged-in": ("claude is not logged in (ana); run paused — log in, then resume.",
                      "login", "login needed"),
}


@pytest.mark.parametrize("kind", sorted(PAUSES))
def test_a_pauses_notice_names_its_reason(kind: str) -> None:
    message, reason, words = PAUSES[kind]
    log, collect = _watched()
    log.entry(Log(T0, message, kind, participant="ana", count=3))  # type: ignore[arg-type]
    (notice,) = collect.notices
    assert notice["summary"] == "paused" and notice["event"] == kind
    assert notice["paused_for"] == reason and notice["reason"] == words
    assert title_of(notice) == f"autodev r1: paused — {words}"
    assert notice["message"] == message


def test_every_pausing_kind_has_a_reason_and_only_those() -> None:
    pausing = {k for k, summary in NOTIFYING_KINDS.items() if summary == "paused"}
    assert set(PAUSED_FOR) == pausing
    assert set(PAUSED_FOR.values()) <= set(PAUSE_REASONS)
    assert set(PAUSE_NEEDS) == set(PAUSE_REASONS)


def test_other_notices_keep_their_plain_title() -> None:
    log, collect = _watched()
    log.entry(Log(T0, "every participant limited — waiting for claude, back first at 10:00",
                  "wait-limited", engine=Engine("claude"), until=T0 + timedelta(hours=1)))
    log.status(T0, "stopped")
    assert [title_of(n) for n in collect.notices] == ["autodev r1: waiting", "autodev r1: stopped"]
    assert all("paused_for" not in n for n in collect.notices)


# -- A18's wait: once per episode ------------------------------------------------------------

#: Any line a run writes, waits and posts drawn often: a post ends the episode, nothing else does.
KINDS = st.sampled_from(("posted", "wait-limited")) | st.sampled_from(LOG_KINDS)


@given(st.lists(KINDS, max_size=40))
def test_A18_every_participant_limited_is_told_once_until_someone_posts(
    kinds: list[str]
) -> None:
    log, collect = _watched()
    expected = 0
    told = False
    for number, kind in enumerate(kinds):
        at = T0 + timedelta(minutes=number)
        log.entry(Log(at, f"line {number}", kind))  # type: ignore[arg-type]
        if kind == "posted":
            told = False
        elif kind == "wait-limited":
            expected += 0 if told else 1
            told = True
    waits = [n for n in collect.notices if n["event"] == "wait-limited"]
    assert len(waits) == expected
    # Each one told is the first wait after the start or after a post.
    firsts = []
    since_post = True
    for number, kind in enumerate(kinds):
        if kind == "posted":
            since_post = True
        elif kind == "wait-limited" and since_post:
            firsts.append(f"line {number}")
            since_post = False
    assert [n["message"] for n in waits] == firsts


def test_A18_a_second_wait_with_no_post_between_is_not_told_again() -> None:
    log, collect = _watched()
    wait = Log(T0, "every participant limited — waiting for claude, back first at 10:00",
               "wait-limited", engine=Engine("claude"), until=T0 + timedelta(hours=1))
    log.entry(wait)
    log.entry(Log(T0, "claude limited until 11:00", "limit", engine=Engine("claude")))
    log.entry(wait)  # woke at the reset, limited again at once: the same episode
    log.entry(Log(T0, "ana posted via claude", "posted", participant="ana",
                  engine=Engine("claude")))
    log.entry(wait)  # after a post: a new episode
    assert [n["event"] for n in collect.notices] == ["wait-limited", "wait-limited"]


# -- a signal ends the daemon --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_daemon_ended_by_a_signal_is_told_as_stopped(name: str) -> None:
    line = (f"daemon ended by {name}; its call in flight was stopped, the owed turn starts "
            "again with the next `autodev run`")
    log, collect = _watched()
    log.note(T0, line)
    assert collect.notices == [{"run": "r1", "event": "stopped", "summary": "stopped",
                                "at": T0.isoformat(), "message": line}]
    assert notice_of_note(T0, "daemon stopped; the run is stopped", "r1") is None


def test_the_daemons_signal_line_is_the_one_that_notifies() -> None:
    # cli/commands.py writes this note when a signal ends the daemon, starting it with the
    # prefix notify.py matches (one constant for both; the e2e in test_notify_episodes.py sends
    # SIGTERM to a real daemon and receives the notice).
    from autodev_shell.cli import commands

    assert DAEMON_ENDED == "daemon ended by "
    assert 'f"{DAEMON_ENDED}{name}; ' in inspect.getsource(commands._drive)
