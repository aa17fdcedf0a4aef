"""The forecast in `autodev status` and `status --json` (`usage_windows`; docs/limits.md
"Forecast", docs/cli.md; issue 37 item 3): one line per account window, from the series of
readings the scheduler keeps in its state."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from autodev_core import (
    CallEnded,
    Engine,
    Participant,
    Policy,
    RunStarted,
    SchedulerConfig,
    UsageObserved,
    UsageReading,
    initial_state,
    step,
)
from autodev_core.control.persistence import PersistenceState
from autodev_core.scheduler import SchedulerState
from autodev_core.serialization import to_json
from autodev_shell.status.stored import read_stored_status, status_of
from autodev_shell.status.usage_forecast import forecast_lines

T0 = datetime(2026, 12, 7, 12, 5, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)
RESETS = datetime(2026, 12, 7, 16, 0, tzinfo=UTC)
LISBON = ZoneInfo("Europe/Lisbon")  # UTC+0 in December
KEYS = ["engine", "window", "utilization", "at", "rate_per_hour", "reaches_at", "resets_at",
        "line"]


def _run(headroom: float | None = 0.95) -> SchedulerState:
    """ana on claude:opus reads 64 %, 73 %, 82 % of the five-hour window an hour apart; another
    run reports the seven-day window of `claude` at 41 %."""
    team = (Participant(id="ana", provider="codex", failover=(Engine("claude", "opus"),)),)
    config = SchedulerConfig(team=team, timezone="Europe/Lisbon",
                             policy=Policy(headroom=headroom))
    state = initial_state(config)
    state, _ = step(state, RunStarted(now=T0 - M))
    for i, used in enumerate((0.64, 0.73, 0.82)):
        call = state.call
        assert call is not None
        reading = UsageReading(provider="claude", utilization=used, window="five_hour",
                               resets_at=RESETS)
        state, _ = step(state, UsageObserved(now=T0 + i * H, engine=Engine("claude", "opus"),
                                             reading=reading, source="laptop"))
    weekly = UsageReading(provider="claude", utilization=0.41, window="seven_day",
                          resets_at=RESETS + 72 * H)
    state, _ = step(state, UsageObserved(now=T0 + 2 * H, engine=Engine("claude"),
                                         reading=weekly, source="laptop"))
    return state


def test_status_writes_the_issues_line_for_each_account_window() -> None:
    state = _run()
    stored = read_stored_status(to_json(state))
    assert stored == status_of(state)  # the fast reader and the full restore agree
    now = T0 + 2 * H + 5 * M
    lines = forecast_lines(stored.series, now, LISBON, stored.hand_over_at)
    assert [f["line"] for f in lines] == [
        "claude five-hour: 82 % at 14:05, rising ~9 %/h, reaches 95 % about 15:31, "
        "resets 16:00",
        "claude seven-day: 41 % at 14:05, resets 2026-12-10 16:00",
    ]
    first = lines[0]
    assert list(first) == KEYS
    assert first["engine"] == "claude" and first["window"] == "five_hour"
    assert first["utilization"] == 0.82 and first["at"] == (T0 + 2 * H).isoformat()
    assert abs(first["rate_per_hour"] - 0.09) < 1e-9
    assert first["reaches_at"].startswith("2026-12-07T15:31")
    assert first["resets_at"] == RESETS.isoformat()
    json.dumps(lines)  # plain values, as `status --json` prints them


def test_past_the_reset_the_window_is_not_forecast() -> None:
    stored = status_of(_run())
    assert [f["window"] for f in forecast_lines(stored.series, RESETS, LISBON)] == ["seven_day"]


def test_the_target_is_the_knobs_figure_when_set() -> None:
    stored = status_of(_run(0.9))
    (five, _week) = forecast_lines(stored.series, T0 + 2 * H, LISBON, stored.hand_over_at)
    assert "reaches 90 % about 14:58" in five["line"]


def test_an_older_stored_state_without_a_series_reads_as_none() -> None:
    raw = json.loads(to_json(_run()))
    del raw["usage_series"]
    assert read_stored_status(json.dumps(raw)).series == ()


def test_status_json_and_text_show_the_forecast(tmp_path: Path) -> None:
    from autodev_shell.status.report import status_facts, status_lines
    from autodev_shell.store.run_store import RunStore

    state = _run()
    at = T0 + 2 * H + 5 * M
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="f", now=at)
    try:
        store.commit(1, (), to_json(state), persistence_state_json=to_json(PersistenceState()),
                     now=at)
        facts = status_facts(store, at)
        assert [f["window"] for f in facts["usage_windows"]] == ["five_hour", "seven_day"]
        assert (f"forecast: {facts['usage_windows'][0]['line']}"
                in status_lines(store, at))
    finally:
        store.close()


def test_a_call_ending_with_two_windows_feeds_both_series() -> None:
    team = (Participant(id="ana", provider="claude"),)
    state, _ = step(initial_state(SchedulerConfig(team=team, timezone="UTC")),
                    RunStarted(now=T0))
    readings = (UsageReading(provider="claude", utilization=0.3, window="five_hour",
                             resets_at=RESETS),
                UsageReading(provider="claude", utilization=0.1, window="seven_day",
                             resets_at=RESETS + 72 * H))
    state, _ = step(state, CallEnded(now=T0 + M, participant="ana", engine=Engine("claude"),
                                     kind="post", posted=True, readings=readings))
    lines = forecast_lines(status_of(state).series, T0 + M, UTC)
    assert [(f["engine"], f["window"]) for f in lines] == [("claude", "five_hour"),
                                                          ("claude", "seven_day")]
