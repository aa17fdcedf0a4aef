"""Structured logs (issue 12 item 3): every `Log` the scheduler writes carries a `kind` and the
fields a program needs, agreeing with the SPEC's words in `message`, which stay as written."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from helpers.clock import T0
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from autodev_core import (
    CallEnded,
    Engine,
    LimitNotice,
    Log,
    Participant,
    RunStarted,
    SchedulerConfig,
    StartCall,
    initial_state,
    step,
)
from autodev_core.scheduler import Effect, Event, SchedulerState
from autodev_core.serialization import from_json, to_json
from autodev_core.testing import SchedulerMachine

#: The fields each kind must carry (the rest may be None), stated from the SPEC's lines.
REQUIRED: dict[str, tuple[str, ...]] = {
    "limit": ("engine", "until"),  # <engine> limited until <time>
    "posted": ("participant", "engine"),  # <id> posted via <engine>
    "outage": ("provider", "until", "count"),  # <provider> could not be reached; … <time>
    "reachable": ("provider",),  # <provider> is reachable again
    "hop-limited": ("participant", "engine", "target"),  # <id>: <from> limited → <to>
    "hop-unreachable": ("participant", "engine", "target"),
    "handover-limited": ("participant", "colleague"),  # <id> is rate limited — @<other> …
    "handover-unreachable": ("participant", "provider", "colleague"),
    "lifted": ("participant", "engine"),
    "wait-limited": ("until",),
    "wait-unreachable": ("until", "provider"),
    "wait-own": ("participant", "until"),
    "failed": ("participant", "engine", "until", "count", "failure"),
    "gave-up": ("count", "failure"),
    "empty-turns": ("participant", "count"),
    "not-logged-in": ("participant", "provider"),
    "max-iterations": ("count",),
    "max-runtime": ("count",),
    # Issue 25 (`Policy.headroom`): <engine> at <n>% of its <window> window — handing over …
    "near-limit": ("engine", "until", "count"),
    "hop-near-limit": ("participant", "engine", "target"),  # <id>: <from> near its limit → <to>
    "handover-near-limit": ("participant", "engine", "colleague"),
    # docs/cli.md, See and undo a limit: <engine> limit cleared by hand — …
    "cleared": ("engine",),
}


def hhmm(at: datetime, zone: object, line_at: datetime) -> str:
    local = at.astimezone(zone)  # type: ignore[arg-type]
    text = f"{local.hour:02d}:{local.minute:02d}"
    if local.date() != line_at.astimezone(zone).date():  # type: ignore[arg-type]
        text = f"{local.year:04d}-{local.month:02d}-{local.day:02d} {text}"
    return text


def check_log(log: Log, state: SchedulerState) -> None:
    """The fields say what the message says."""
    assert log.kind in REQUIRED, log
    for name in REQUIRED[log.kind]:
        assert getattr(log, name) is not None, (name, log)
    text = log.message
    if log.participant is not None:
        assert text.startswith(log.participant) or f"({log.participant})" in text, log
    if log.engine is not None and log.kind not in ("handover-limited", "gave-up",
                                                   "not-logged-in", "handover-unreachable"):
        assert str(log.engine) in text or text.endswith("back on its primary provider"), log
    if log.target is not None:
        assert text.endswith(f"→ {log.target}"), log
    if log.colleague is not None:
        assert text.endswith(f"@{log.colleague} takes the turn"), log
    if log.provider is not None and log.kind != "wait-unreachable":  # its line names no one
        assert log.provider in text, log
    if log.until is not None:
        assert log.until >= log.at
        assert hhmm(log.until, state.config.zone, log.at) in text, log
    if log.kind == "near-limit":
        assert f" at {log.count}% of its " in text, log
        assert any(r.engine == log.engine and r.until == log.until for r in state.readings)
    if log.kind in ("gave-up", "empty-turns", "max-iterations"):
        assert log.count is not None and str(log.count) in text, log
    if log.failure is not None:
        assert f"({log.failure})" in text or f"({log.failure});" in text, log
    if log.kind == "limit":
        engine = log.engine
        assert engine is not None
        assert any(r.engine == engine and r.until == log.until for r in state.limits)
    if log.kind == "outage":
        assert any(o.provider == log.provider and o.retry_at == log.until
                   and o.attempts == log.count for o in state.outages)
    if log.kind in ("wait-limited", "wait-unreachable", "wait-own"):
        assert log.until == state.wait_until
        assert (log.engine is None) != (log.provider is None), log
    if log.kind == "failed":
        assert log.count == state.failures and log.until == state.wait_until
    assert from_json(to_json(log), Log) == log


class StructuredLogs(SchedulerMachine):
    def check_step(
        self,
        before: SchedulerState,
        event: Event,
        after: SchedulerState,
        effects: tuple[Effect, ...],
    ) -> None:
        super().check_step(before, event, after, effects)
        for effect in effects:
            if isinstance(effect, Log):
                check_log(effect, after)


def test_every_scheduler_log_line_carries_fields_that_agree_with_its_message() -> None:
    run_state_machine_as_test(StructuredLogs, settings=settings(max_examples=25))


def test_a_hop_names_the_participant_both_engines_and_keeps_the_spec_words() -> None:
    ana = Participant(id="ana", provider="claude", failover=(Engine("codex"),))
    config = SchedulerConfig(team=(ana,))
    state, effects = step(initial_state(config), RunStarted(now=T0))
    (start,) = [e for e in effects if isinstance(e, StartCall)]
    end = T0 + timedelta(minutes=1)
    notice = LimitNotice(provider="claude", reset_at=T0 + timedelta(hours=2), text="limit")
    state, effects = step(state, CallEnded(now=end, participant="ana", engine=start.engine,
                                           kind="limit", limit=notice))
    logs = [e for e in effects if isinstance(e, Log)]
    assert [(log.kind, log.message) for log in logs] == [
        ("limit", "claude limited until 11:00"),
        ("hop-limited", "ana: claude limited → codex"),
    ]
    assert logs[0].engine == Engine("claude") and logs[0].until == T0 + timedelta(hours=2)
    assert (logs[1].participant, logs[1].engine, logs[1].target) == (
        "ana", Engine("claude"), Engine("codex"))


def test_a_log_built_by_hand_is_a_note_and_a_bad_kind_is_refused() -> None:
    assert Log(at=T0, message="hello").kind == "note"
    try:
        Log(at=T0, message="x", kind="shout")  # type: ignore[arg-type]
    except ValueError as error:
        assert re.search("kind", str(error))
    else:  # pragma: no cover
        raise AssertionError("an unknown kind was accepted")


def test_the_json_schema_page_lists_every_kind_with_its_keys() -> None:
    """docs/cli.md documents each `event` of a JSON log line and the keys it always has."""
    from pathlib import Path

    from autodev_core.scheduler.effects import LOG_KINDS

    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text("utf-8")
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| .*\| (.*) \|$", page, flags=re.MULTILINE))
    for kind in LOG_KINDS:
        if kind == "note":
            continue
        assert kind in rows, f"docs/cli.md has no row for event {kind!r}"
        for key in REQUIRED[kind]:
            assert f"`{key}`" in rows[kind], (kind, key)
