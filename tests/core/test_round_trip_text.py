"""SPEC 0.3 for every string a value can hold: JSON and YAML round trips are lossless for every
serializable class of the core, whatever Unicode's line, space, control or surrogate characters
its text fields carry (issue 24 item 0).

Seeds: one or more real values of each class (from the bundled scenarios run through the real
`step`, and the control plane's own value strategy). The property takes a seed, writes it out
with the JSON converter, puts odd text into each of its string leaves, builds the value back
(a leaf the class refuses, e.g. a provider name, is left as it was) and round-trips the result
through both formats. `test_every_serializable_class_has_a_seed` fails when a new class lacks
one, so the property cannot silently skip it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

import autodev_core
from autodev_core import parse_scenario, simulate
from autodev_core.scheduler.effects import Effect
from autodev_core.scheduler.events import Event
from autodev_core.serialization import (
    from_json,
    from_yaml,
    json_converter,
    to_json,
    to_yaml,
)
from autodev_core.simulation import driver

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"

#: Every character Unicode calls a line or paragraph separator, a space, a control, a format
#: character or a surrogate, plus YAML's own indicators and a few letters to put them between.
ODD_CHARACTERS = st.characters(categories=["Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"])
YAML_INDICATORS = st.sampled_from(list("-?:,[]{}#&*!|>'\"%@`\\ \t\n\r~=.0aZ"))
ODD_TEXT = st.text(ODD_CHARACTERS | YAML_INDICATORS, max_size=12)

#: The characters the issue named, each alone and in company (pinned, whatever the draw).
NAMED = ["\x85", "\u2028", "\u2029", "\r", "\r\n", "\x00", "\ud800", "\udfff", "\ufeff",
         "a\x85b", " \x85 ", "\x85\n", "\n ", " \n", "\t\x85", "\u2028 ", "\ufffe", "\uffff"]

#: attrs classes of the core that never leave the reader or the driver as values of their own:
#: internal working records, not part of any state, event, effect or result.
NOT_SERIALIZED = {
    "Candidate", "Found", "Piece", "PreparedCandidate", "PreparedClassification", "Meter",
    "RateLimitEvent", "WindowUsage", "Output", "_Known", "_PreparedLimit", "_Working",
    "Limited",
}


def serializable_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(autodev_core.__path__, "autodev_core."):
        if ".testing" in info.name:
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (inspect.isclass(obj) and attrs.has(obj) and obj.__module__ == module.__name__
                    and obj.__qualname__ not in NOT_SERIALIZED):
                found[obj.__qualname__] = obj
    return found


def _walk(value: Any) -> Iterator[Any]:
    """`value` and every attrs value inside it."""
    if attrs.has(type(value)):
        yield value
        for field in attrs.fields(type(value)):
            yield from _walk(getattr(value, field.name))
    elif isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            yield from _walk(item)
    elif isinstance(value, dict) or hasattr(value, "items"):
        for key, item in value.items():
            yield from _walk(key)
            yield from _walk(item)


def _scenario_seeds() -> list[Any]:
    seen: list[Any] = []
    real_step = driver.step

    def recording(state: Any, event: Any) -> Any:
        seen.append((event, Event))
        new_state, effects = real_step(state, event)
        seen.extend((effect, Effect) for effect in effects)
        return new_state, effects

    driver.step = recording  # type: ignore[assignment]
    try:
        for path in sorted(EXAMPLES.glob("*.yaml")):
            scenario = parse_scenario(path.read_text(), source=str(path))
            result = simulate(scenario, source=str(path))
            seen.append((scenario, None))
            seen.append((result, None))
    finally:
        driver.step = real_step  # type: ignore[assignment]
    return seen


def _control_plane_seeds() -> list[Any]:
    from hypothesis import HealthCheck, settings
    from test_control_plane_properties import values  # the control plane's own strategy

    drawn: list[Any] = []

    @settings(max_examples=200, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(values)
    def collect(pair: tuple[Any, Any]) -> None:
        value, cls = pair
        drawn.append((value, cls if cls is not type(value) else None))

    collect()
    return drawn


def _hand_seeds() -> list[Any]:
    """Values no bundled scenario or control-plane draw happens to hold."""
    from autodev_core import (
        BoundTiers,
        CallCancelled,
        Classification,
        CommitMarker,
        ConfigWarning,
        Engine,
        GateApproved,
        GateRequested,
        LimitCleared,
        LimitNotice,
        LimitObserved,
        Outage,
        PauseRequested,
        RecoveryCopy,
        ResumeRequested,
        StopRequested,
    )
    from autodev_core.control.identity import RunIdentity
    from autodev_core.control.persistence import (
        PersistenceState,
        StalePendingOutcome,
        plan_stale_pending_clear,
    )
    from autodev_core.control.replicas import (
        CheckpointGrowth,
        PrimaryExport,
        ReplicaState,
        RestoreDecision,
        SearchGateDecision,
        SyncCadence,
        SyncOutcome,
    )
    from autodev_core.control.turn_input import InputRecord, TurnStart
    from autodev_core.detection.classification import UsageReading
    from autodev_core.scheduler import EngineUsage, Headroom, UsageObserved
    from autodev_core.scheduler.forecast import WindowForecast
    from autodev_core.scheduler.state import UsagePoint
    from autodev_core.simulation.compare import HeadroomComparison, RunCost
    from autodev_core.simulation.scenario import PeerReport, UsagePeriod

    now = datetime(2026, 12, 4, 9, 30, tzinfo=UTC)
    claude = Engine.parse("claude:sonnet")
    notice = LimitNotice(provider="claude", reset_at=now, text="5-hour limit reached ∙ resets 5am")
    state = PersistenceState()
    return [
        (BoundTiers(), None), (CallCancelled(now), Event), (StopRequested(now), Event),
        (PauseRequested(now), Event), (ResumeRequested(now), Event),
        (GateRequested(now, "ana"), Event), (GateApproved(now, "ana"), Event),
        (LimitObserved(now, claude, now, seen=now, source="another run"), Event),
        # docs/cli.md, See and undo a limit; an engine on an account (docs/participants.md).
        (LimitCleared(now, Engine.parse("claude@work:sonnet")), Event),
        (Classification("limit", notice, "5-hour limit reached"), None),
        (Classification("other", None, "done"), None),
        (CommitMarker("run-a", 3, "sqlite"), None), (RecoveryCopy("run-a", 3), None),
        (Outage("codex", now, 2), None),
        (StalePendingOutcome(plan_stale_pending_clear(state, RunIdentity("run-a")), state), None),
        (CheckpointGrowth(10, 2), None), (PrimaryExport(3), None),
        (ReplicaState("checkpoint", "backup", 2), None),
        (RestoreDecision(True, "primary-missing", None, 2), None),
        (SearchGateDecision("skip", "no state"), None), (SyncCadence(), None),
        (SyncOutcome("search", False, "disk full"), None),
        (InputRecord("m1", "text", "context"), None),
        (TurnStart("fresh", "m1", "text"), None),
        (PeerReport(now, claude, now, "another run"), None),
        # Issue 25: a usage reading, where the scheduler keeps it, and the knob.
        (UsageObserved(now, claude, UsageReading("claude", 0.97, "five_hour", now, 0.9),
                       seen=now, source="another run"), Event),
        (Classification("other", None, "", UsageReading("claude", 0.5)), None),
        (EngineUsage(claude, 0.97, "seven_day", now, True, now, "laptop", 0.75), None),
        (Headroom(0.95), None),
        # The forecast's series and its figures per account window (docs/limits.md, Forecast).
        (UsagePoint("claude", "five_hour", now, 0.82, now + timedelta(hours=2)), None),
        (UsagePoint("claude:opus", "seven_day_opus", now, 0.4), None),
        (WindowForecast("claude", "five_hour", 0.82, now, 0.09, now + timedelta(hours=1),
                        now + timedelta(hours=2), 0.95), None),
        (WindowForecast("codex", "primary", 0.3, now, None, None, None, 0.95), None),
        # Issue 28: a participant file's warning (A9, C5).
        (ConfigWarning("failover entry 'claude' is its own primary engine", "ana.md", 6), None),
        # Issue 25 item 4: a scenario's usage periods and the knob-off/on comparison.
        (UsagePeriod("claude", now, now + timedelta(hours=1), 0.97, "five_hour", now, 0.9),
         None),
        (UsagePeriod("codex", now, now + timedelta(hours=2)), None),
        (HeadroomComparison(0.95, RunCost(3, 4, 1, 1, timedelta(minutes=5), timedelta(hours=1)),
                            RunCost(4, 4, 0, 0, timedelta(0), timedelta(0))), None),
    ]


def _seeds() -> dict[str, list[tuple[Any, Any]]]:
    """Per class name: (value, union to tag it as, or None) pairs, a few each."""
    by_class: dict[str, list[tuple[Any, Any]]] = {}
    for top, union in [*_scenario_seeds(), *_control_plane_seeds(), *_hand_seeds()]:
        for inner in _walk(top):
            as_type = union if inner is top else None
            bucket = by_class.setdefault(type(inner).__qualname__, [])
            if len(bucket) < 6 and (inner, as_type) not in bucket:
                bucket.append((inner, as_type))
    return by_class


SEEDS = _seeds()
CLASSES = serializable_classes()


def test_every_serializable_class_has_a_seed() -> None:
    missing = sorted(set(CLASSES) - set(SEEDS))
    assert not missing, f"no seed value for {missing}: add one so 0.3 is checked for it"


def _string_paths(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(data, str):
        yield path
    elif isinstance(data, dict):
        for key, item in data.items():
            if key != "type":  # the union's tag names a class, it is no text of the value
                yield from _string_paths(item, (*path, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _string_paths(item, (*path, index))


def _replaced(data: Any, path: tuple[Any, ...], text: str) -> Any:
    if not path:
        return text
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        return {**data, head: _replaced(data[head], rest, text)}
    copy = list(data)
    copy[head] = _replaced(copy[head], rest, text)
    return copy


def _structure(data: Any, cls: Any) -> Any:
    try:
        return json_converter.structure(data, cls)
    except Exception:
        return None  # the class refuses that text in that field (a provider, a date): fine


def _assert_round_trips(value: Any, as_type: Any) -> None:
    cls = as_type or type(value)
    text = to_json(value, as_type=as_type)
    assert from_json(text, cls) == value, text
    yaml_text = to_yaml(value, as_type=as_type)
    assert from_yaml(yaml_text, cls) == value, yaml_text


@pytest.mark.parametrize("name", sorted(CLASSES))
@given(data=st.data())
def test_0_3_every_string_round_trips_in_every_class(name: str, data: st.DataObject) -> None:
    value, as_type = data.draw(st.sampled_from(SEEDS[name]), label="seed")
    cls = as_type or type(value)
    raw = json_converter.unstructure(value, unstructure_as=as_type)
    changed = raw
    for path in _string_paths(raw):
        text = data.draw(ODD_TEXT | st.sampled_from(NAMED), label=f"text at {path}")
        candidate = _replaced(changed, path, text)
        if _structure(candidate, cls) is not None:
            changed = candidate
    rebuilt = _structure(changed, cls)
    assert rebuilt is not None
    _assert_round_trips(rebuilt, as_type)


@given(ODD_TEXT)
@example("\x85")
@example("a\u2028\x85\u2029b")
@example(" \r\n ")
@example("\ud800\x00")
@example("- x\n  # y\x85")
@example("'\x85'")
@example("word " * 40 + "\x85" + "  \u2028 " * 30)  # folded at the writer's width
def test_0_3_yaml_keeps_every_character_of_a_text(text: str) -> None:
    """The YAML writer itself, on a text alone, in a list and as a mapping's key and value."""
    for value in (text, [text, text], {text: text}, {"k": [text, {"n": text}]}):
        assert yaml.safe_load(to_yaml(value)) == value
