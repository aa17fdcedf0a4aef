"""Readings per account window (docs/limits.md "Readings per account window"; issue 37 item 1).

A reading names its window, and the window is the account's (`Engine.primary`): claude's
`five_hour` and `seven_day` windows hold for every claude engine, a per-model window
(`seven_day_opus`) only for the engines of that model, any other window only for the engine
that reported it. Every decision of `Policy.headroom` reads the windows that hold for an
engine; with the knob off the readings decide nothing (traces as before).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import (
    CallEnded,
    Engine,
    Log,
    Participant,
    Policy,
    RunStarted,
    SchedulerConfig,
    StartCall,
    UsageObserved,
    UsageReading,
    initial_state,
    step,
)
from autodev_core.detection import classify_output
from autodev_core.scheduler import EngineUsage, SchedulerState
from autodev_core.scheduler.windows import near_engines, window_family
from autodev_core.testing import near_limit

NOW = datetime(2026, 12, 7, 14, 0, tzinfo=UTC)
H = timedelta(hours=1)
THRESHOLD = 0.95
#: The engines of a team in the properties: three of claude's account, one each of the others.
ENGINES = ("claude", "claude:opus", "claude:sonnet", "claude:claude-opus-4-1", "codex",
           "codex:gpt-5", "agy")
WINDOWS = ("five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet", "")


#: Whose turn starts on which engine: ana on claude, rui and eva (codex limited) on a claude
#: model; `all` holds every engine of ENGINES in its lane.
TEAM = {"ana": ("claude", ["agy"]), "rui": ("codex", ["claude:sonnet", "agy"]),
        "eva": ("codex", ["claude:opus", "agy"]),
        "all": ("claude", ["claude:opus", "claude:sonnet", "claude:claude-opus-4-1",
                           "codex:gpt-5", "agy"])}


def _config(headroom: bool = True) -> SchedulerConfig:
    team = tuple(Participant(id=pid, provider=provider,
                             failover=tuple(Engine.parse(e) for e in chain))
                 for pid, (provider, chain) in TEAM.items())
    return SchedulerConfig(team=team, timezone="UTC",
                           policy=Policy(headroom=THRESHOLD if headroom else None))


def _state(readings: list[tuple[str, float, str, int]], headroom: bool = True) -> SchedulerState:
    """A started run holding `readings`: (engine, utilization, window, minutes ago seen)."""
    state, _ = step(initial_state(_config(headroom)), RunStarted(now=NOW - 2 * H))
    records = tuple(sorted(
        (EngineUsage(Engine.parse(e), used, window, NOW + H, seen=NOW - ago * timedelta(minutes=1))
         for e, used, window, ago in readings),
        key=lambda r: (str(r.engine), r.window)))
    return attrs.evolve(state, readings=records, call=None, last_event_at=NOW)


def _near(state: SchedulerState) -> frozenset[str]:
    return near_engines(state.readings, [Engine.parse(e) for e in ENGINES], NOW, THRESHOLD)


# -- the windows ---------------------------------------------------------------------------------


def test_window_family_names_the_model_of_a_per_model_window() -> None:
    assert window_family("seven_day_opus") == "opus"
    assert window_family("seven_day_sonnet") == "sonnet"
    assert window_family("five_hour") is None
    assert window_family("seven_day") is None
    assert window_family("") is None
    assert window_family("seven_day_") is None


def test_a_five_hour_reading_on_opus_puts_sonnet_near_too() -> None:
    """The issue's case: a warning on `claude:opus` steers turns off `claude:sonnet`, which
    draws on the same five-hour window; codex and agy are another account's."""
    near = _near(_state([("claude:opus", 0.97, "five_hour", 1)]))
    assert near == {"claude", "claude:opus", "claude:sonnet", "claude:claude-opus-4-1"}


def test_an_opus_weekly_window_holds_for_opus_engines_only() -> None:
    near = _near(_state([("claude:sonnet", 0.97, "seven_day_opus", 1)]))
    assert near == {"claude:opus", "claude:claude-opus-4-1"}


def test_an_engine_without_a_model_takes_a_model_window_it_reported_itself() -> None:
    near = _near(_state([("claude", 0.97, "seven_day_opus", 1)]))
    assert near == {"claude", "claude:opus", "claude:claude-opus-4-1"}


def test_a_window_without_a_name_stays_the_reporting_engines() -> None:
    assert _near(_state([("claude:opus", 0.97, "", 1)])) == {"claude:opus"}


def test_the_newest_reading_of_an_account_window_is_the_accounts() -> None:
    """opus read 97 % ten minutes ago, sonnet 40 % a minute ago, of the same five-hour window:
    the window was reset in between or was misread; the account is at 40 % now."""
    state = _state([("claude:opus", 0.97, "five_hour", 10),
                    ("claude:sonnet", 0.40, "five_hour", 1)])
    assert _near(state) == frozenset()
    assert near_limit(state, NOW) == frozenset()


def test_detection_reads_each_window_of_a_real_claude_event() -> None:
    """claude 2.1.332's `allowed_warning` event (tests/fixtures/realcli/kit): both windows of
    its unifiedWindows are readings; `usage` stays the one nearest its limit."""
    line = ('{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning",'
            '"resetsAt":1796651541,"rateLimitType":"five_hour","utilization":0.92,'
            '"surpassedThreshold":0.9,"unifiedWindows":{"five_hour":{"utilization":0.92,'
            '"resetsAt":1796651541,"status":"allowed_warning","surpassedThreshold":0.9},'
            '"seven_day":{"utilization":0.41,"resetsAt":1796839521,"status":"allowed"}}}}')
    seen = classify_output("claude", stdout=line, exit_code=0, now=NOW, local_tz=UTC)
    assert seen.usage is not None and seen.usage.window == "five_hour"
    assert [(r.window, r.utilization, r.threshold) for r in seen.readings] == [
        ("five_hour", 0.92, 0.9), ("seven_day", 0.41, None)]


# -- the properties ------------------------------------------------------------------------------

readings_drawn = st.lists(
    st.tuples(st.sampled_from(ENGINES), st.sampled_from((0.2, 0.9, 0.95, 0.97, 1.0)),
              st.sampled_from(WINDOWS), st.integers(min_value=0, max_value=30)),
    max_size=6, unique_by=lambda t: (t[0], t[2]))


@given(readings=readings_drawn)
def test_near_engines_agree_with_the_model(readings: list[tuple[str, float, str, int]]) -> None:
    """The reducer's near engines are the model's (autodev_core.testing.near_limit, written
    from docs/limits.md on its own)."""
    state = _state(readings)
    assert _near(state) == {str(e) for e in near_limit(state, NOW)} & set(ENGINES)


@given(engine=st.sampled_from(ENGINES), window=st.sampled_from(("five_hour", "seven_day")),
       others=readings_drawn)
def test_an_account_window_reading_moves_every_engine_of_the_account(
    engine: str, window: str, others: list[tuple[str, float, str, int]],
) -> None:
    """The newest reading at 97 % of an account window, on any engine: every engine of that
    account is near; it changes nothing for another account's engines."""
    account = engine.split(":")[0]
    rest = [r for r in others if (r[0], r[2]) != (engine, window)]
    before = _near(_state(rest))
    after = _near(_state([*rest, (engine, 0.97, window, -1)]))  # seen after all others
    mine = {e for e in ENGINES if e.split(":")[0] == account}
    assert mine <= after
    assert after - mine == before - mine


@given(engine=st.sampled_from(ENGINES), family=st.sampled_from(("opus", "sonnet")),
       others=readings_drawn)
def test_a_model_window_reading_moves_only_its_models_engines(
    engine: str, family: str, others: list[tuple[str, float, str, int]],
) -> None:
    """A reading at 97 % of `seven_day_<family>`: the account's engines whose model names the
    family become near (and an engine without a model that reported the window itself); no
    other engine moves."""
    window = f"seven_day_{family}"
    rest = [r for r in others if (r[0], r[2]) != (engine, window)]
    before = _near(_state(rest))
    after = _near(_state([*rest, (engine, 0.97, window, -1)]))
    account = engine.split(":")[0]
    model = {e for e in ENGINES if e.split(":")[0] == account and ":" in e
             and family in e.split(":")[1]}
    # an engine without a model takes the window when it reported it itself
    model |= {e for e, _u, w, _a in [*rest, (engine, 0, window, 0)]
              if w == window and ":" not in e and e.split(":")[0] == account}
    assert model <= after
    assert after - model == before - model


@given(owner=st.sampled_from(("ana", "rui", "eva")),
       window=st.sampled_from(("five_hour", "seven_day")))
def test_a_turn_start_steps_off_every_engine_of_a_near_account(owner: str, window: str) -> None:
    """The decision itself: a reading at 97 % on `claude:opus`; whichever claude engine the
    owner's turn would start on (claude, claude:sonnet, claude:opus), it starts on agy."""
    from autodev_core.scheduler import EngineLimit
    state = _state([("claude:opus", 0.97, window, 1)])
    state = attrs.evolve(state, due=state.config.index[owner], status="stopped",
                         last_event_at=None,
                         limits=(EngineLimit(Engine("codex"), NOW + H, seen=NOW),))
    _after, effects = step(state, RunStarted(now=NOW))
    starts = [(e.participant, str(e.engine)) for e in effects if isinstance(e, StartCall)]
    assert starts == [(owner, "agy")]
    runner = {"ana": "claude", "rui": "claude:sonnet", "eva": "claude:opus"}[owner]
    lines = [e.message for e in effects if isinstance(e, Log)]
    assert f"{owner}: {runner} near its limit → agy" in lines


def test_a_call_reporting_two_windows_records_both() -> None:
    state = _state([])
    state = attrs.evolve(state, status="stopped", last_event_at=None)
    state, effects = step(state, RunStarted(now=NOW))
    (start,) = [e for e in effects if isinstance(e, StartCall)]
    five = UsageReading(provider=start.engine.provider, utilization=0.5, window="five_hour",
                        resets_at=NOW + H)
    week = UsageReading(provider=start.engine.provider, utilization=0.97, window="seven_day",
                        resets_at=NOW + 50 * H)
    state, effects = step(state, CallEnded(now=NOW + timedelta(minutes=5),
                                           participant=start.participant, engine=start.engine,
                                           kind="post", posted=True, usage=week,
                                           readings=(five, week)))
    assert {(r.window, r.utilization) for r in state.readings} == {
        ("five_hour", 0.5), ("seven_day", 0.97)}
    assert [e.kind for e in effects if isinstance(e, Log)].count("near-limit") == 1


@given(readings=readings_drawn, due=st.integers(min_value=0, max_value=len(TEAM) - 1))
def test_knob_off_the_readings_decide_nothing(
    readings: list[tuple[str, float, str, int]], due: int,
) -> None:
    """With `Policy.headroom` off, a turn start with any readings of any windows makes the same
    effects, byte for byte, as with none (the behaviour before readings per window)."""
    state = attrs.evolve(_state(readings, headroom=False), due=due, status="stopped",
                         last_event_at=None)
    _a, with_readings = step(state, RunStarted(now=NOW))
    _b, without = step(attrs.evolve(state, readings=()), RunStarted(now=NOW))
    assert with_readings == without


def test_a_reading_shared_by_another_run_moves_the_account_too() -> None:
    """docs/sharing.md: a reading of `claude:opus` another run saw is an account reading here
    as well (the record carries its window)."""
    state = _state([])
    reading = UsageReading(provider="claude", utilization=0.97, window="five_hour",
                           resets_at=NOW + H)
    state, effects = step(state, UsageObserved(now=NOW, engine=Engine("claude", "opus"),
                                               reading=reading, source="laptop"))
    assert "claude:sonnet" in _near(state)
    assert [e.kind for e in effects if isinstance(e, Log)] == ["near-limit"]


def test_knob_off_the_bundled_storm_runs_byte_for_byte_as_before() -> None:
    """The bundled storm (docs/examples/headroom/storm-week.yaml: a reading on every healthy
    call) with the knob off: its whole simulated output, 1,165 lines, is byte for byte what the
    code before readings per account window printed — the hash was recorded by running this
    file through commit b43edfc's `iter_output` (re-record it that way if the storm changes)."""
    import hashlib
    from pathlib import Path

    from autodev_core.simulation.driver import iter_output
    from autodev_core.simulation.scenario import parse_scenario

    root = Path(__file__).resolve().parents[2]
    storm = root / "docs" / "examples" / "headroom" / "storm-week.yaml"
    scenario = parse_scenario(storm.read_text(encoding="utf-8"))
    off = attrs.evolve(scenario, policy=attrs.evolve(scenario.policy, headroom=None))
    text = "\n".join(iter_output(off))
    assert len(text.splitlines()) == 1165
    assert hashlib.sha256(text.encode()).hexdigest() == (
        "c710224b3f56d804783ba6cc94601e323ae26fb5dea8619e0099577698c10adf")
