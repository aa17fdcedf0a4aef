"""Act before the limit. A healthy call's usage reading, read from the CLI's own
structured output (never model text, A5; never polled, A1), and the opt-in `Policy.headroom`
that hands a turn over before the limit (in A10-A17's order) and never waits because of it.
The stateful properties are in the shipped `SchedulerMachine`
(tests/core/test_scheduler_stateful.py): with the knob off a reading changes nothing at all."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.clock import T0

from autodev_core import (
    CallEnded,
    ConfigError,
    Engine,
    Headroom,
    Log,
    Participant,
    Policy,
    RunStarted,
    SchedulerConfig,
    StartCall,
    UsageObserved,
    UsageReading,
    classify_output,
    initial_state,
    parse_scenario,
    step,
)
from autodev_core.detection import prepare_classification
from autodev_core.scheduler import SchedulerState
from autodev_core.scheduler.policy import parse_policy, policy_data
from autodev_core.serialization import from_json, to_json

M = timedelta(minutes=1)
H = timedelta(hours=1)
REALCLI = Path(__file__).parents[1] / "fixtures" / "realcli"


def rate_limit_event(status: str, **info: object) -> str:
    return json.dumps({"type": "rate_limit_event",
                       "rate_limit_info": {"status": status, **info}})


RESULT = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok"})
WARNING = rate_limit_event(
    "allowed_warning", resetsAt=int((T0 + 5 * H).timestamp()), rateLimitType="five_hour",
    utilization=0.97, surpassedThreshold=0.9, overageStatus="rejected")


# -- reading (docs/limits.md; A1, A2, A5) ---------------------------------------------------


def test_A2_an_allowed_warning_is_no_limit_but_a_usage_reading() -> None:
    seen = classify_output("claude", stdout=WARNING + "\n" + RESULT, exit_code=0, now=T0,
                           local_tz=UTC)
    assert seen.kind == "other" and seen.limit is None
    assert seen.usage == UsageReading(provider="claude", utilization=0.97, window="five_hour",
                                      resets_at=T0 + 5 * H, threshold=0.9)


def test_A2_the_recorded_fixture_reads_its_seven_day_window() -> None:
    stdout = ('{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning",'
              '"resetsAt":1784079000,"rateLimitType":"seven_day","utilization":0.81,'
              '"overageStatus":"rejected"}}\n' + RESULT)
    seen = classify_output("claude", stdout=stdout, exit_code=0,
                           now=datetime(2026, 7, 15, 10, tzinfo=UTC), local_tz=UTC)
    assert seen.usage is not None
    assert (seen.usage.utilization, seen.usage.window, seen.usage.threshold) == (
        0.81, "seven_day", None)
    assert seen.usage.resets_at == datetime.fromtimestamp(1784079000, UTC)


def test_A2_a_rejected_event_is_a_limit_and_carries_no_reading() -> None:
    stdout = rate_limit_event("rejected", resetsAt=int((T0 + H).timestamp()), utilization=1.0)
    seen = classify_output("claude", stdout=stdout, exit_code=1, now=T0, local_tz=UTC)
    assert seen.kind == "limit" and seen.usage is None


def test_of_several_readings_the_window_nearest_its_limit_is_read() -> None:
    low = rate_limit_event("allowed", rateLimitType="seven_day", utilization=0.4)
    seen = classify_output("claude", stdout="\n".join((WARNING, low, RESULT)), exit_code=0,
                           now=T0, local_tz=UTC)
    assert seen.usage is not None and seen.usage.window == "five_hour"


@pytest.mark.parametrize("info", [
    {"rateLimitType": "five_hour"},  # `allowed` with no utilization: nothing to read
    {"utilization": "high"}, {"utilization": -0.5}, {"utilization": 11.0},
])
def test_an_unreadable_utilization_is_no_reading(info: dict[str, object]) -> None:
    stdout = rate_limit_event("allowed", **info) + "\n" + RESULT
    assert classify_output("claude", stdout=stdout, exit_code=0, now=T0,
                           local_tz=UTC).usage is None


def test_A5_a_reading_quoted_by_the_model_is_never_read() -> None:
    quoted = json.dumps({"type": "result", "subtype": "success", "is_error": False,
                         "result": WARNING})
    assistant = json.dumps({"type": "assistant", "message": {"content": [
        {"type": "text", "text": WARNING}]}})
    for stdout in (quoted, assistant, "the CLI said: " + WARNING):
        assert classify_output("claude", stdout=stdout, exit_code=0, now=T0,
                               local_tz=UTC).usage is None


def test_a_prepared_classification_reads_the_same_reading_at_every_instant() -> None:
    prepared = prepare_classification("claude", stdout=WARNING + "\n" + RESULT, exit_code=0)
    for now in (T0, T0 + 6 * H):
        assert prepared.at(now, UTC) == classify_output(
            "claude", stdout=WARNING + "\n" + RESULT, exit_code=0, now=now, local_tz=UTC)


def test_real_codex_0_171_prints_no_reading_though_its_api_sent_the_usage_headers() -> None:
    """Recorded against a loopback stand-in of the Responses API that sent
    `x-codex-primary-used-percent: 97` and the other usage headers (docs/limits.md): codex
    kept them only in its session file, so neither `exec --json` nor its transcript has a
    reading."""
    stdout = (REALCLI / "codex-0.171-usage-headers.stdout").read_text(encoding="utf-8")
    stderr = (REALCLI / "codex-0.171-usage-headers.stderr").read_text(encoding="utf-8")
    rollout = (REALCLI / "codex-0.171-rollout-token-count.jsonl").read_text(encoding="utf-8")
    assert '"used_percent":97.0' in rollout  # what codex did with the headers
    for out, err in ((stdout, ""), ("", stderr)):
        seen = classify_output("codex", stdout=out, stderr=err, exit_code=0, now=T0,
                               local_tz=UTC)
        assert seen.kind == "other" and seen.usage is None


def test_a_reading_is_checked_when_built() -> None:
    with pytest.raises(ValueError, match="utilization"):
        UsageReading(provider="claude", utilization=-1)
    with pytest.raises(TypeError, match="utilization"):
        UsageReading(provider="claude", utilization=True)
    with pytest.raises(ValueError, match="aware"):
        UsageReading(provider="claude", utilization=0.5, resets_at=datetime(2026, 12, 1))
    with pytest.raises(ValueError):
        UsageReading(provider="gemini", utilization=0.5)


# -- the knob (docs/limits.md) ----------------------------------------------------------------


def test_the_knob_is_off_by_default_and_reads_a_fraction() -> None:
    assert Policy().headroom is None
    assert Policy(headroom=0.95).headroom == Headroom(hand_over_at=0.95)
    assert parse_policy({"headroom": {"hand_over_at": 0.95}}) == Policy(headroom=0.95)
    assert parse_policy({"headroom": None}) == Policy()
    assert policy_data(Policy(headroom=0.95)) == {"headroom": {"hand_over_at": 0.95}}
    assert policy_data(Policy()) == {}
    for bad in (0, 1.5, -0.1, True, "high", float("nan")):
        with pytest.raises((TypeError, ValueError), match="hand_over_at"):
            Policy(headroom=bad)


SCENARIO = """\
start: 2026-12-01T09:00:00
timezone: UTC
team:
  - {id: ana, provider: claude}
policy:
  headroom: {hand_over_at: 0.95}
"""


def test_a_scenario_sets_the_knob() -> None:
    scenario = parse_scenario(SCENARIO)
    assert scenario.policy.headroom == Headroom(hand_over_at=0.95)


@pytest.mark.parametrize(
    ("headroom", "says"),
    [
        ("{hand_over_at: 1.5}", "policy.headroom.hand_over_at"),
        ("{hand_over_at: high}", "policy.headroom.hand_over_at"),
        ("{at: 0.9}", "policy.headroom.at"),
        ("{}", "policy.headroom needs hand_over_at"),
        ("0.95", "policy.headroom must be a mapping"),
    ],
)
def test_a_bad_knob_in_a_scenario_is_one_line_naming_the_file_and_field(
    headroom: str, says: str
) -> None:
    text = SCENARIO.replace("{hand_over_at: 0.95}", headroom)
    with pytest.raises(ConfigError) as raised:
        parse_scenario(text, source="s.yaml")
    message = str(raised.value)
    assert "s.yaml:6" in message and says in message and "\n" not in message


def test_a_bad_knob_in_autodev_yaml_is_one_line_naming_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from autodev_shell.cli import main
    from autodev_shell.team import load_team

    root = tmp_path / "team"
    root.mkdir()
    (root / "ana.md").write_text("---\nprovider: claude\n---\nReview.\n", encoding="utf-8")
    (root / "autodev.yaml").write_text(
        "timezone: UTC\npolicy:\n  headroom: {hand_over_at: 0.9}\n", encoding="utf-8")
    assert load_team(root).policy == Policy(headroom=0.9)
    (root / "autodev.yaml").write_text(
        "timezone: UTC\npolicy:\n  headroom: {hand_over_at: 2}\n", encoding="utf-8")
    code = main(["run", str(root), "--run", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "autodev.yaml:2" in err and "policy.headroom.hand_over_at" in err


# -- deciding (docs/limits.md; A10-A17, A18, A23, A24, A33) --------------------------------------


ANA = Participant(id="ana", provider="claude", failover=(Engine("codex"),))
RUI = Participant(id="rui", provider="agy")


def run(team: tuple[Participant, ...], hand_over_at: float | None
        ) -> tuple[SchedulerState, tuple[object, ...]]:
    config = SchedulerConfig(team=team, policy=Policy(headroom=hand_over_at))
    return step(initial_state(config), RunStarted(now=T0))


def post(state: SchedulerState, at: datetime, reading: UsageReading | None = None
         ) -> tuple[SchedulerState, list[object]]:
    call = state.call
    assert call is not None
    state, effects = step(state, CallEnded(now=at, participant=call.participant,
                                           engine=call.engine, kind="post", posted=True,
                                           usage=reading))
    return state, list(effects)


def started(effects: list[object]) -> tuple[str, str]:
    (start,) = [e for e in effects if isinstance(e, StartCall)]
    return start.participant, str(start.engine)


def lines(effects: list[object]) -> list[tuple[str, str]]:
    return [(e.kind, e.message) for e in effects if isinstance(e, Log)]


def claude_at(used: float, resets: datetime = T0 + 5 * H) -> UsageReading:
    return UsageReading(provider="claude", utilization=used, window="five_hour",
                        resets_at=resets)


def test_knob_on_a_warned_engine_hands_over_along_the_chain_then_returns_at_the_reset() -> None:
    state, _ = run((ANA,), 0.95)
    state, effects = post(state, T0 + M, claude_at(0.97, T0 + 2 * H))
    assert lines(effects) == [
        ("posted", "ana posted via claude"),
        ("near-limit", "claude at 97% of its five-hour window — handing over until 11:00"),
        ("hop-near-limit", "ana: claude near its limit → codex"),
    ]
    assert started(effects) == ("ana", "codex")
    state, effects = post(state, T0 + 2 * M)  # the next turn: on codex, no new line (A24)
    assert started(effects) == ("ana", "codex") and lines(effects) == [
        ("posted", "ana posted via codex")]
    state, effects = post(state, T0 + 2 * H)  # the window reset (A38: now >= t)
    assert started(effects) == ("ana", "claude")


def test_knob_on_a_later_reading_below_the_threshold_returns_to_the_engine() -> None:
    state, _ = run((ANA, RUI), 0.95)
    state, effects = post(state, T0 + M, claude_at(0.97))
    assert started(effects) == ("rui", "agy")
    state, effects = step(state, UsageObserved(now=T0 + 2 * M, engine=Engine("claude"),
                                               reading=claude_at(0.5), source="laptop"))
    assert effects == ()  # a reading decides nothing by itself
    state, effects = post(state, T0 + 3 * M)
    assert started(effects) == ("ana", "claude")


def test_knob_on_with_no_chain_a_colleague_on_a_free_engine_takes_the_turn() -> None:
    ana = Participant(id="ana", provider="claude")
    state, _ = run((RUI, ana), 0.95)  # rui's turn first, on agy
    state, effects = post(state, T0 + M)
    assert started(effects) == ("ana", "claude")
    state, effects = post(state, T0 + 2 * M, claude_at(0.96))
    assert started(effects) == ("rui", "agy")
    state, effects = post(state, T0 + 3 * M)  # ana's turn: claude is warned, rui takes it
    assert lines(effects)[-1] == (
        "handover-near-limit", "ana: claude near its limit — @rui takes the turn")
    assert started(effects) == ("rui", "agy")


def test_knob_on_a_warning_never_makes_the_run_wait() -> None:
    ana = Participant(id="ana", provider="claude")
    state, _ = run((ana,), 0.95)
    state, effects = post(state, T0 + M, claude_at(0.99))
    assert started(effects) == ("ana", "claude")  # nothing else: the warned engine runs
    assert state.status == "running" and state.wait_until is None


def test_A16_a_pending_gate_keeps_its_turn_on_a_warned_engine() -> None:
    gated = Participant(id="ana", provider="claude", gate=True)
    state, _ = run((gated, RUI), 0.95)
    state, effects = post(state, T0 + M, claude_at(0.99))
    state, effects = post(state, T0 + 2 * M)  # rui posts; ana's turn, gate pending
    assert started(effects) == ("ana", "claude")


def test_knob_off_a_reading_is_kept_for_the_forecast_and_changes_no_line() -> None:
    bare, _ = run((ANA,), None)
    with_reading, effects = post(bare, T0 + M, claude_at(0.99))
    without, effects_without = post(bare, T0 + M)
    assert effects == effects_without
    assert started(effects) == ("ana", "claude")
    assert [r.utilization for r in with_reading.readings] == [0.99]
    assert with_reading.readings and not without.readings


def test_windows_are_kept_apart_and_the_newest_reading_of_a_window_wins() -> None:
    state, _ = run((Participant(id="ana", provider="claude"),), 0.95)
    state, _ = post(state, T0 + M, claude_at(0.97))
    weekly = UsageReading(provider="claude", utilization=0.4, window="seven_day")
    state, _ = post(state, T0 + 2 * M, weekly)
    assert sorted((r.window, r.utilization) for r in state.readings) == [
        ("five_hour", 0.97), ("seven_day", 0.4)]
    # A peer's older reading of the same window does not undo this run's newer one.
    state, _ = step(state, UsageObserved(now=T0 + 3 * M, engine=Engine("claude"),
                                         reading=claude_at(0.2), seen=T0, source="laptop"))
    assert ("five_hour", 0.97) in [(r.window, r.utilization) for r in state.readings]


def test_0_3_a_state_with_readings_and_the_knob_round_trips() -> None:
    state, _ = run((ANA,), 0.95)
    state, _ = post(state, T0 + M, claude_at(0.97))
    assert from_json(to_json(state), SchedulerState) == state


# -- the forecast (docs/limits.md; C6) ----------------------------------------------------


def test_C6_status_forecasts_each_window_from_the_readings() -> None:
    from zoneinfo import ZoneInfo

    from autodev_shell.status.report import usage_facts
    from autodev_shell.status.stored import read_stored_status, status_of

    lisbon = ZoneInfo("Europe/Lisbon")  # UTC+0 in December
    ana = Participant(id="ana", provider="claude")
    config = SchedulerConfig(team=(ana,), timezone="Europe/Lisbon", policy=Policy(headroom=0.95))
    state, _ = step(initial_state(config), RunStarted(now=T0))
    resets = datetime(2026, 12, 1, 14, 30, tzinfo=UTC)
    state, _ = post(state, T0 + M, claude_at(0.97, resets))
    weekly = UsageReading(provider="claude", utilization=0.4, window="seven_day",
                          resets_at=T0 + timedelta(days=3))
    state, _ = step(state, UsageObserved(now=T0 + 2 * M, engine=Engine("claude"),
                                         reading=weekly, source="laptop"))
    stored = read_stored_status(to_json(state))
    assert stored == status_of(state)
    now = datetime(2026, 12, 1, 13, 18, tzinfo=UTC)
    facts = usage_facts(stored, now, lisbon)
    assert [f["forecast"] for f in facts] == [
        "claude at 97% of its five-hour window, resets 14:30 (in 1h12m)"
        " — new turns hand over (policy.headroom)",
        "claude at 40% of its seven-day window, resets 2026-12-04 09:00 (in 67h42m)"
        " (reported by laptop)",
    ]
    assert facts[0]["percent"] == 97 and facts[0]["resets_at"] == resets.isoformat()
    assert facts[0]["in_seconds"] == 72 * 60 and facts[0]["hands_over"] is True
    # Past its reset a window is forecast no more (A38: `now >= t`).
    assert [f["window"] for f in usage_facts(stored, resets, lisbon)] == ["seven_day"]


def test_C6_an_older_stored_state_without_readings_reads_as_none() -> None:
    from autodev_shell.status.stored import read_stored_status

    state, _ = run((ANA,), None)
    raw = json.loads(to_json(state))
    del raw["readings"]
    assert read_stored_status(json.dumps(raw)).readings == ()


# -- simulate (docs/limits.md; SPEC D) --------------------------------------------------

WARNED = """\
start: 2026-12-01T09:00:00
timezone: UTC
team:
  - {id: ana, provider: claude, failover: [codex]}
calls:
  claude:
    - {post: "first", stdout: 'WARNING'}
    - {post: "second"}
  default: {post: ok}
until: 2026-12-01T09:05:00
""".replace("WARNING", rate_limit_event(
    "allowed_warning", resetsAt=int((T0 + 2 * H).timestamp()), rateLimitType="five_hour",
    utilization=0.97))


def test_D_a_scenario_answer_carrying_claudes_warning_is_read_as_real_output_is() -> None:
    from autodev_core import simulate

    off = [line.message for line in simulate(parse_scenario(WARNED)).lines]
    on = [line.message for line in simulate(parse_scenario(
        WARNED + "policy:\n  headroom: {hand_over_at: 0.95}\n")).lines]
    assert off[:2] == ["ana posted via claude", "ana posted via claude"]
    assert on[:4] == [
        "ana posted via claude",
        "claude at 97% of its five-hour window — handing over until 11:00",
        "ana: claude near its limit → codex",
        "ana posted via codex",
    ]
