"""The daemon loop (SPEC 0.2, B9, B19, B21, C2, C3): the shell drives the same `step` as the
simulation, so a scripted team run through the real loop, the real store and the real sleeper
on a fake clock writes exactly the lines `autodev simulate` writes for the same scenario."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers.scripted import EXAMPLES, ScriptedCLIs, scripted_runner

from autodev_core.participant import Participant
from autodev_core.scheduler import EFFECT_TYPES, StartCall
from autodev_core.simulation import simulate
from autodev_core.simulation.scenario import Scenario, parse_scenario
from autodev_shell.calls import CallResult
from autodev_shell.clock import FakeClock
from autodev_shell.runner import Runner, StreamLog
from autodev_shell.store.run_store import RunStore


def _runner(scenario: Scenario, tmp_path: Path) -> tuple[Runner, ScriptedCLIs, StreamLog]:
    clock = FakeClock(scenario.start)
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="test-run", now=scenario.start)
    clis = ScriptedCLIs(scenario, clock)
    log = StreamLog(scenario.zone, stream=io.StringIO())
    runner = scripted_runner(scenario, store, clock, clis, log=log, slice_seconds=3600)
    return runner, clis, log


def _stamp(at: datetime, scenario: Scenario) -> str:
    return at.astimezone(scenario.zone).strftime("%Y-%m-%dT%H:%M:%S")


NO_MESSAGES = sorted(
    p for p in EXAMPLES.glob("*.yaml") if "messages:" not in p.read_text(encoding="utf-8")
)


@pytest.mark.parametrize("path", NO_MESSAGES, ids=lambda p: p.stem)
def test_0_2_the_shell_loop_writes_what_the_simulation_writes(path: Path, tmp_path: Path) -> None:
    scenario = parse_scenario(path.read_text(encoding="utf-8"), source=str(path))
    expected = simulate(scenario)
    runner, _clis, log = _runner(scenario, tmp_path)
    summary = runner.run(stop_at=scenario.until)
    got = [f"{_stamp(at, scenario)} {message}" for at, message in log.lines]
    want = [f"{_stamp(line.at, scenario)} {line.message}" for line in expected.lines]
    assert got[: len(want)] == want
    # The simulation ends at `until` (or a pause); the loop then stops the run.
    assert expected.status in runner.statuses
    assert summary.status == "stopped"


def test_C3_every_post_is_committed_to_the_thread_once(tmp_path: Path) -> None:
    scenario = parse_scenario((EXAMPLES / "02-colleague-round-robin.yaml").read_text())
    runner, _clis, _log = _runner(scenario, tmp_path)
    summary = runner.run(stop_at=scenario.until)
    thread = runner.store.thread()
    assert [(p.participant, p.engine) for p in thread] == list(summary.posts)
    assert len({p.key for p in thread}) == len(thread)
    assert runner.store.integrity_check() == ("ok",) or runner.store.integrity_check() == ()
    assert runner.durability.state.pending_persist is False  # B8: everything confirmed
    assert runner.durability.state.last_accepted_revision == summary.revisions


def test_B19_retries_and_hops_reuse_the_fresh_turns_prompt(tmp_path: Path) -> None:
    scenario = parse_scenario((EXAMPLES / "01-chain-hop.yaml").read_text())
    runner, clis, _log = _runner(scenario, tmp_path)
    runner.run(stop_at=scenario.until)
    first_turn = [p for p in clis.prompts[:3]]
    assert first_turn[0][1] == "fresh"
    assert [kind for _, kind, _ in first_turn[1:]] == ["no-new-input", "no-new-input"]
    assert len({prompt for _, _, prompt in first_turn}) == 1  # the same text, verbatim


def test_B21_every_effect_the_core_can_emit_has_a_handler(tmp_path: Path) -> None:
    scenario = parse_scenario((EXAMPLES / "01-chain-hop.yaml").read_text())
    runner, _clis, _log = _runner(scenario, tmp_path)
    assert set(EFFECT_TYPES) <= set(runner.handlers)
    for effect_type in EFFECT_TYPES:
        assert callable(runner.handlers[effect_type])


def test_C6_a_stop_control_ends_the_run(tmp_path: Path) -> None:
    scenario = parse_scenario((EXAMPLES / "02-colleague-round-robin.yaml").read_text())
    runner, clis, _log = _runner(scenario, tmp_path)
    runner.store.enqueue_control("stop", now=scenario.start)
    summary = runner.run(stop_at=scenario.start + timedelta(days=1))
    assert summary.status == "stopped"
    assert clis.prompts == []  # stopped before any call was made


def test_C7_long_waits_show_a_countdown_naming_what_comes_back(tmp_path: Path) -> None:
    scenario = parse_scenario(
        (EXAMPLES / "05-default-resets-everyone-limited.yaml").read_text(encoding="utf-8")
    )
    runner, _clis, log = _runner(scenario, tmp_path)
    screen = io.StringIO()
    runner.countdown = screen
    runner.slice_seconds = 600
    runner.run(stop_at=scenario.until)
    waits = [m for _, m in log.lines if m.startswith("every participant limited — waiting for ")]
    assert waits, "the scenario has an A18 wait"
    engine = waits[0].split("waiting for ", 1)[1].split(",", 1)[0]
    shown = screen.getvalue()
    assert f"waiting for {engine}, back first at " in shown
    assert " left" in shown


def test_C7_json_log_lines_for_machines(tmp_path: Path) -> None:
    import json
    from zoneinfo import ZoneInfo

    stream = io.StringIO()
    log = StreamLog(ZoneInfo("Europe/Lisbon"), stream=stream, file=tmp_path / "autodev.log",
                    json_lines=True)
    at = datetime.fromisoformat("2026-12-01T14:30:05+00:00")
    log.line(at, "claude limited until 15:30")
    log.close()
    (record,) = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert record == {"at": "2026-12-01T14:30:05+00:00", "local": "2026-12-01T14:30:05",
                      "kind": "log", "message": "claude limited until 15:30"}
    assert (tmp_path / "autodev.log").read_text(encoding="utf-8") == stream.getvalue()


def test_A20_a_wall_clock_set_back_during_a_call_never_feeds_the_core_earlier_time(
    tmp_path: Path,
) -> None:
    """The core refuses time going backwards (A38); NTP pulling the machine's clock back is the
    shell's to absorb: an event is never stamped before the last one it fed."""
    scenario = parse_scenario((EXAMPLES / "02-colleague-round-robin.yaml").read_text())
    runner, clis, log = _runner(scenario, tmp_path)
    clock = clis.clock
    calls = [0]

    def set_back(effect: StartCall, member: Participant, prompt: str) -> CallResult:
        result = clis(effect, member, prompt)
        calls[0] += 1
        if calls[0] == 2:
            clock.advance(-2 * 3600)  # the clock is corrected two hours back mid-run
            store = runner.store  # events stamped after it
            store.enqueue_control("say", "still there?", now=clock.now())
            store.enqueue_control("pause", now=clock.now())
            store.enqueue_control("resume", now=clock.now())
        return result

    runner.perform_call = set_back
    summary = runner.run(stop_at=scenario.until)
    assert summary.status == "stopped"
    instants = [at for at, _message in log.lines]
    assert instants == sorted(instants)
    assert runner.state.last_event_at is not None


JSON_KEYS = {"at", "local", "kind", "message"}
LOG_KEYS = {"event", "participant", "engine", "provider", "target", "colleague", "until", "count",
            "failure"}


def test_C7_run_json_writes_structured_fields_statuses_and_controls(tmp_path: Path) -> None:
    """`autodev run --json` (C7): core lines with their kind and fields, every
    status change, and the pause, resume and stop controls, one JSON object per line."""
    import json

    scenario = parse_scenario((EXAMPLES / "07-outage-hop-and-handover.yaml").read_text())
    runner, clis, _text = _runner(scenario, tmp_path)
    stream = io.StringIO()
    runner.log = StreamLog(scenario.zone, stream=stream, json_lines=True)
    calls = [0]

    def with_controls(effect: StartCall, member: Participant, prompt: str) -> CallResult:
        calls[0] += 1
        if calls[0] == 2:
            runner.store.enqueue_control("pause", now=clis.clock.now())
            runner.store.enqueue_control("resume", now=clis.clock.now())
        return clis(effect, member, prompt)

    runner.perform_call = with_controls
    runner.run(stop_at=scenario.until)
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert records and all(set(r) >= JSON_KEYS for r in records)
    logs = [r for r in records if r["kind"] == "log"]
    assert logs and all(set(r) - JSON_KEYS <= LOG_KEYS and "event" in r for r in logs)
    by_event = {r["event"]: r for r in logs}
    posted = by_event["posted"]
    assert posted["message"] == f"{posted['participant']} posted via {posted['engine']}"
    outage = by_event["outage"]
    assert outage["message"].startswith(f"{outage['provider']} could not be reached")
    assert datetime.fromisoformat(outage["until"]) > datetime.fromisoformat(outage["at"])
    statuses = [r["status"] for r in records if r["kind"] == "status"]
    assert statuses == runner.statuses and "paused" in statuses and statuses[-1] == "stopped"
    controls = [r["control"] for r in records if r["kind"] == "control"]
    assert controls[:2] == ["pause", "resume"]
    instants = [datetime.fromisoformat(r["at"]) for r in records]
    assert instants == sorted(instants)
