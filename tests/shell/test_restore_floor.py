"""A restart keeps the saved instant as a floor (A20, A38): `restore_state`
keeps `last_event_at`, the core refuses an earlier event with a hint, and the daemon started on
a clock behind the saved state goes on from that instant with one clear line, never a crash."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.clock import T0
from helpers.scripted import EXAMPLES, scripted_runner

from autodev_core import (
    Participant,
    RunStarted,
    SchedulerConfig,
    SchedulerProtocolError,
    SchedulerState,
    StartCall,
    initial_state,
    restore_state,
    step,
)
from autodev_core.serialization import from_json, to_json
from autodev_core.simulation.scenario import parse_scenario
from autodev_shell.clock import FakeClock
from autodev_shell.runner import Runner, StreamLog
from autodev_shell.store.run_store import RunStore

TEAM = (Participant(id="ana", provider="claude"), Participant(id="rui", provider="codex"))


def _saved_mid_call() -> str:
    config = SchedulerConfig(team=TEAM)
    state, _ = step(initial_state(config), RunStarted(now=T0))
    return to_json(state)


def test_A20_restore_state_keeps_the_saved_instant_as_a_floor() -> None:
    saved = from_json(_saved_mid_call(), SchedulerState)
    restored = restore_state(SchedulerConfig(team=TEAM), saved)
    assert restored.last_event_at == T0
    with pytest.raises(SchedulerProtocolError) as refused:
        step(restored, RunStarted(now=T0 - timedelta(hours=1)))
    assert "time never goes backwards (A38)" in str(refused.value)
    assert "max(now, state.last_event_at)" in str(refused.value)  # what to do instead (A20)
    state, _ = step(restored, RunStarted(now=max(T0 - timedelta(hours=1), T0)))
    assert state.status == "running" and state.last_event_at == T0


def test_B18_the_first_call_after_a_restart_is_a_fresh_turn() -> None:
    """docs/api.md: `fresh` is true after `restore_state`; a crashed hop's retry comes back as a
    fresh turn, as any `RunStarted` begins one."""
    config = SchedulerConfig(team=TEAM)
    saved = from_json(_saved_mid_call(), SchedulerState)
    restored = restore_state(config, saved)
    assert restored.fresh
    _, effects = step(restored, RunStarted(now=T0 + timedelta(minutes=5)))
    (start,) = [e for e in effects if isinstance(e, StartCall)]
    assert (start.participant, start.turn_kind) == ("ana", "fresh")


def test_A20_a_daemon_restarted_on_a_clock_behind_the_saved_state_goes_on(
    tmp_path: Path,
) -> None:
    scenario = parse_scenario((EXAMPLES / "02-colleague-round-robin.yaml").read_text())
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="test-run", now=scenario.start)

    def runner(clock: FakeClock) -> tuple[Runner, StreamLog]:
        log = StreamLog(scenario.zone, stream=io.StringIO())
        return scripted_runner(scenario, store, clock, log=log, slice_seconds=3600), log

    first, _ = runner(FakeClock(scenario.start))
    first.run(stop_at=scenario.start + timedelta(minutes=3))
    floor = first.state.last_event_at
    assert floor is not None and floor > scenario.start
    behind = FakeClock(floor - timedelta(hours=2))  # NTP, or the saved run moved machines
    second, log = runner(behind)
    assert second.state.last_event_at == floor  # restore_state kept it
    summary = second.run(stop_at=behind.now() + timedelta(minutes=3))  # no protocol error
    assert summary.calls >= 1
    stream = log.stream
    assert isinstance(stream, io.StringIO)
    notes = [line for line in stream.getvalue().splitlines() if "machine clock" in line]
    assert notes == [
        f"{floor.astimezone(scenario.zone):%Y-%m-%dT%H:%M:%S} the machine clock is 2h00m "
        "behind the run's last event, at "
        f"{floor:%Y-%m-%d %H:%M:%S} UTC; events are stamped at that instant until the clock "
        "catches up (A20)"
    ]
    instants = [at for at, _message in log.lines]
    assert min(instants) >= floor and instants == sorted(instants)
