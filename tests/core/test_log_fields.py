"""Issue 28 item 4: `LogKind` and `LOG_FIELDS` are public, `log_fields` turns a `Log` into the
compact dict programs read (C7), and a saved state fed back without `restore_state` says so."""

from __future__ import annotations

import json
import typing
from datetime import UTC, datetime, timedelta

import pytest

import autodev_core
from autodev_core import (
    LOG_FIELDS,
    LOG_KINDS,
    Engine,
    Log,
    LogKind,
    RunStarted,
    SchedulerConfig,
    SchedulerProtocolError,
    initial_state,
    log_fields,
    parse_participant,
    restore_state,
    step,
)

T0 = datetime(2026, 12, 4, 9, 30, tzinfo=UTC)


def test_LogKind_is_exported_and_is_the_kinds_a_Log_takes() -> None:
    assert set(typing.get_args(LogKind)) == set(LOG_KINDS)
    assert {"LogKind", "LOG_KINDS", "LOG_FIELDS", "log_fields"} <= set(autodev_core.__all__)
    assert set(LOG_FIELDS) == {f.name for f in Log.__attrs_attrs__} - {"at", "message", "kind"}


def test_C7_log_fields_has_no_null_fields_and_writes_engines_and_instants_as_text() -> None:
    line = Log(T0, "ana hit codex:o3's limit", kind="limit", participant="ana",
               engine=Engine("codex", "o3"), until=T0 + timedelta(hours=2))
    assert log_fields(line) == {
        "at": "2026-12-04T09:30:00+00:00", "kind": "limit",
        "message": "ana hit codex:o3's limit", "participant": "ana", "engine": "codex:o3",
        "until": "2026-12-04T11:30:00+00:00",
    }
    assert json.loads(json.dumps(log_fields(line))) == log_fields(line)
    assert list(log_fields(Log(T0, "hi", count=0))) == ["at", "kind", "message", "count"]


def test_A33_a_saved_live_state_fed_back_names_restore_state() -> None:
    ana = parse_participant("---\nprovider: claude\n---\nReview.", id="ana")
    config = SchedulerConfig(team=[ana])
    saved, _ = step(initial_state(config), RunStarted(now=T0))
    with pytest.raises(SchedulerProtocolError, match=r"restore_state\(config, saved\)"):
        step(saved, RunStarted(now=T0 + timedelta(minutes=1)))
    restored = restore_state(config, saved)
    state, _ = step(restored, RunStarted(now=T0 + timedelta(minutes=1)))
    assert state.status == "running"
