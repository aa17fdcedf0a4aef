"""`autodev simulate` (SPEC C6, D): the scenario runs through the real scheduler in virtual time."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.errors import ConfigError
from autodev_core.scenario import CallAnswer, Scenario, parse_scenario
from autodev_core.scheduler import STATUSES
from autodev_core.simulation import simulate
from autodev_core.testing import is_learned, scheduler_configs
from autodev_shell.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
SCENARIOS = sorted(EXAMPLES.glob("*.yaml"))


def _run(text: str) -> list[str]:
    return list(simulate(parse_scenario(text, source="t.yaml"), source="t.yaml").render())


HEAD = """start: 2026-12-01T09:00:00
timezone: Europe/Lisbon
"""


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_D_examples_match_their_hand_derived_output(path: Path) -> None:
    expected = path.with_suffix(".expected").read_text(encoding="utf-8").splitlines()
    scenario = parse_scenario(path.read_text(encoding="utf-8"), source=str(path))
    assert list(simulate(scenario, source=str(path)).render()) == expected


def test_D_there_are_examples_to_compare_with() -> None:
    assert len(SCENARIOS) >= 5


def test_C6_cli_prints_the_lines_then_the_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        HEAD + "until: 2026-12-01T09:02:30\nteam: [{id: ana, provider: claude}]\n",
        encoding="utf-8",
    )
    assert main(["simulate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "2026-12-01T09:01:00 ana posted via claude",
        "2026-12-01T09:02:00 ana posted via claude",
        "status: running",
    ]


def test_C6_cli_bad_file_names_file_and_field_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(HEAD + "team: [{id: ana, provider: gpt}]\n", encoding="utf-8")
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"autodev: {path}:") and "team[0].provider" in err
    assert "Traceback" not in err


def test_C6_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: cannot read the scenario" in capsys.readouterr().err


def test_D_a_team_member_with_no_installed_cli_is_a_config_error() -> None:
    base = parse_scenario(HEAD + "team: [{id: ana, provider: claude}]\n")
    scenario = Scenario(
        start=base.start, timezone=base.timezone, installed=frozenset({"codex"}), team=base.team
    )
    with pytest.raises(ConfigError, match="team: participant 'ana' has no installed CLI"):
        simulate(scenario, source="t.yaml")


def test_D_answers_are_consumed_in_order_then_default_then_ok() -> None:
    lines = _run(
        HEAD
        + "until: 2026-12-01T09:10:00\nteam: [{id: ana, provider: claude}]\n"
        + "calls:\n  claude: [{post: a, duration: 120}]\n  default: {exit: 0, duration: 60}\n"
    )
    assert lines[0] == "2026-12-01T09:02:00 ana posted via claude"
    assert lines[1].startswith("2026-12-01T09:03:00 ana failed on claude (ana ended the turn")
    lines = _run(HEAD + "until: 2026-12-01T09:01:00\nteam: [{id: ana, provider: codex}]\n")
    assert lines == ["2026-12-01T09:01:00 ana posted via codex", "status: running"]


def test_D_a_message_at_t_ends_a_failure_wait_at_t() -> None:
    lines = _run(
        HEAD
        + "until: 2026-12-01T09:20:00\nteam: [{id: ana, provider: claude}]\n"
        + "calls:\n  claude: [{exit: 1}, {exit: 1}, {exit: 1}, {post: ok, duration: 60}]\n"
        + "messages: [2026-12-01T09:05:00]\n"
    )
    # failures at 09:01, 09:02:01 (then 1 min), 09:04:01 (then 2 min: 09:06:01); the message
    # at 09:05 starts the next attempt at once, which posts at 09:06.
    assert lines[3] == "2026-12-01T09:06:00 ana posted via claude"


def test_D_the_simulation_ends_when_the_run_pauses() -> None:
    lines = _run(
        HEAD
        + "team: [{id: ana, provider: claude}]\n"
        + "calls:\n  claude: [{stdout: 'Not logged in · Please run /login', exit: 1}]\n"
    )
    assert lines == [
        "2026-12-01T09:01:00 claude is not logged in (ana); run paused — log in, then resume.",
        "status: paused",
    ]


def test_D_max_iterations_counts_calls() -> None:
    lines = _run(HEAD + "max_iterations: 2\nteam: [{id: ana, provider: claude}]\n")
    assert lines[-2:] == [
        "2026-12-01T09:02:00 Reached max_iterations (2 calls); run stopped.",
        "status: stopped",
    ]


def test_D_calls_that_never_let_time_move_are_refused() -> None:
    with pytest.raises(ConfigError, match="time never moves"):
        _run(
            HEAD
            + "team: [{id: ana, provider: claude}]\ncalls:\n  default: {post: x, duration: 0}\n"
        )


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    config = draw(scheduler_configs(max_team=4, limited_iterations=False))
    start = draw(st.sampled_from(["2026-12-01T09:00:00", "2026-03-29T00:30:00"]))
    answer = st.builds(
        CallAnswer,
        post=st.sampled_from([None, "", "done"]),
        stdout=st.sampled_from(["", "You've hit your limit · resets 2:30pm (Europe/Lisbon)",
                                "Not logged in · Please run /login", "Usage limit reached."]),
        stderr=st.sampled_from(["", "getaddrinfo ENOTFOUND api.openai.com",
                                "RESOURCE_EXHAUSTED: Individual quota reached."]),
        exit=st.sampled_from([0, 1]),
        timeout=st.booleans(),
        duration=st.integers(min_value=30, max_value=3600).map(lambda s: timedelta(seconds=s)),
    )
    engines = sorted({str(e) for lane in config.lanes for e in lane})
    calls = {key: draw(st.lists(answer, max_size=6)) for key in engines}
    scenario = Scenario(
        start=parse_scenario(HEAD.replace("2026-12-01T09:00:00", start)
                             + "team: [{id: x, provider: claude}]\n").start,
        timezone="Europe/Lisbon",
        installed=config.installed,
        team=config.team,
        calls=tuple(calls.items()),
        default=draw(st.none() | answer),
        messages=(),
    )
    return scenario.__class__(
        start=scenario.start, timezone=scenario.timezone, installed=scenario.installed,
        team=scenario.team, calls=scenario.calls, default=scenario.default,
        until=scenario.start + timedelta(hours=8),
    )


@given(scenarios())
def test_D_any_scenario_replays_in_order_and_ends_with_a_status(scenario: Scenario) -> None:
    first = simulate(scenario)
    assert simulate(scenario) == first  # deterministic
    stamps = [line.at for line in first.lines]
    assert stamps == sorted(stamps)  # one line per event, in virtual-time order
    assert first.state.status in STATUSES
    for instant in set(stamps):
        learned = [is_learned(line.message) for line in first.lines if line.at == instant]
        assert learned == sorted(learned, reverse=True)  # A39
    rendered = first.render()
    assert rendered[-1] == f"status: {first.state.status}"
