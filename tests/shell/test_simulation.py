"""`autodev simulate` (SPEC C6, D): the scenario runs through the real scheduler in virtual time."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.errors import ConfigError
from autodev_core.scheduler import STATUSES
from autodev_core.simulation import simulate
from autodev_core.simulation.scenario import CallAnswer, Scenario, parse_scenario
from autodev_core.testing import is_learned, scheduler_configs
from autodev_shell.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
SCENARIOS = sorted(EXAMPLES.glob("*.yaml"))


def _run(text: str) -> list[str]:
    return list(simulate(parse_scenario(text, source="t.yaml"), source="t.yaml").render())


HEAD = """start: 2026-12-01T09:00:00
timezone: Europe/Lisbon
"""


def scenario_file(tmp_path: Path, text: str) -> Path:
    """`text` written as the scenario file `autodev simulate` reads."""
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_D_examples_match_their_hand_derived_output(path: Path) -> None:
    expected = path.with_suffix(".expected").read_text(encoding="utf-8").splitlines()
    scenario = parse_scenario(path.read_text(encoding="utf-8"), source=str(path))
    assert list(simulate(scenario, source=str(path)).render()) == expected


def test_D_there_are_examples_to_compare_with() -> None:
    assert len(SCENARIOS) >= 5


def _simulate_ana(tmp_path: Path, *, until: str) -> int:
    """`autodev simulate` of ana alone on claude from HEAD's start until `until`: its exit
    code (what it printed is in capsys)."""
    team = "team: [{id: ana, provider: claude}]\n"
    return main(["simulate", str(scenario_file(tmp_path, HEAD + f"until: {until}\n" + team))])


def test_C6_cli_prints_the_lines_then_the_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _simulate_ana(tmp_path, until="2026-12-01T09:02:30") == 0
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


# ------------------------------------------------------------------------------------------------
# SPEC D `timeout: true`, the horizon, and scenarios at the edges

RECONNECTING = (
    "ERROR: Reconnecting... 1/5\n"
    "ERROR: stream error: error sending request for url (https://api.openai.com/v1/responses): "
    "failed to lookup address information: Temporary failure in name resolution\n"
    "ERROR: Reconnecting... waiting for network\n"
    "ERROR: Reconnecting... waiting for network\n"
)


def test_D_A37_a_timed_out_call_with_endless_reconnect_output_is_an_outage() -> None:
    """SPEC D: `timeout: true` is a call the shell killed, with no exit code; codex's endless
    reconnect output there is an outage (A26, A37), not `codex timed out`."""
    stderr = RECONNECTING.replace("\n", "\\n")
    lines = _run(
        HEAD + "until: 2026-12-01T09:05:00\nteam: [{id: ana, provider: codex}]\n"
        f'calls:\n  codex: [{{stderr: "{stderr}", timeout: true}}]\n'
    )
    assert lines[0] == "2026-12-01T09:01:00 codex could not be reached; trying it again at 09:02"
    assert not any("timed out" in line for line in lines)


def test_D_a_timed_out_call_with_other_output_is_a_timeout() -> None:
    lines = _run(
        HEAD + "until: 2026-12-01T09:05:00\nteam: [{id: ana, provider: codex}]\n"
        "calls:\n  codex: [{stderr: 'thinking...', timeout: true}]\n"
    )
    assert lines[0] == (
        "2026-12-01T09:01:00 ana failed on codex (codex timed out); next attempt at 09:01"
    )


def test_D_a_scenario_without_until_says_it_stopped_at_the_horizon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario_file(
        tmp_path,
        HEAD + "team: [{id: ana, provider: claude}]\n"
        "calls:\n  default: {post: ok, duration: 7200}\n",
    )
    assert main(["simulate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    # Seven days (the horizon) after 09:00 on 1 December, the run was still going.
    assert out[-3] == "2026-12-08T09:00:00 ana posted via claude"
    assert out[-2].startswith("2026-12-08T09:00:00 simulation horizon reached: 7 days after start")
    assert out[-1] == "status: running"
    result = simulate(parse_scenario(path.read_text(encoding="utf-8")))
    assert result.horizon_reached


def test_D_a_scenario_that_reaches_its_until_or_pauses_writes_no_horizon_line() -> None:
    with_until = _run(HEAD + "until: 2026-12-01T09:02:00\nteam: [{id: ana, provider: claude}]\n")
    assert not any("horizon" in line for line in with_until)
    paused = _run(
        HEAD + "team: [{id: ana, provider: claude}]\n"
        "calls:\n  claude: [{stdout: 'Not logged in · Please run /login', exit: 1}]\n"
    )
    assert not any("horizon" in line for line in paused) and paused[-1] == "status: paused"


@pytest.mark.parametrize(
    "start", ["9999-12-31T09:00:00", "9999-01-01T00:00:00", "0001-01-01T00:00:00"]
)
def test_D_a_start_outside_the_calendar_the_run_needs_is_one_line_exit_2(
    start: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario_file(
        tmp_path,
        f"start: {start}\ntimezone: Asia/Tokyo\nteam: [{{id: ana, provider: claude}}]\n",
    )
    assert main(["simulate", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"autodev: {path}:1: start: {start} is out of range")
    assert captured.out == ""


def test_D_until_and_messages_outside_the_calendar_are_one_line() -> None:
    with pytest.raises(ConfigError, match=r"t.yaml:2: until: 9999-03-01T00:00:00 is out of range"):
        parse_scenario(
            HEAD.replace("timezone: Europe/Lisbon\n", "until: 9999-03-01T00:00:00\n"
                         "timezone: Europe/Lisbon\n") + "team: [{id: ana, provider: claude}]\n",
            source="t.yaml",
        )
    with pytest.raises(ConfigError, match=r"messages\[0\]: 9999-03-01T00:00:00 is out of range"):
        parse_scenario(
            HEAD + "team: [{id: ana, provider: claude}]\nmessages: [9999-03-01T00:00:00]\n",
            source="t.yaml",
        )


NOTICES_AT_THE_EDGE = (
    "You've hit your limit · resets 5am",
    "Opus weekly limit reached ∙ resets Dec 31, 9am",
    "Usage limit reached. Try again in 2 hours.",
    "Claude AI usage limit reached|253402300000",
)


@given(
    zone=st.timezones(),
    last=st.booleans(),
    notice=st.sampled_from(NOTICES_AT_THE_EDGE),
    duration=st.integers(3_600, 3 * 86_400),
)
def test_D_a_scenario_at_the_ends_of_the_calendar_runs_or_is_refused_in_one_line(
    zone: ZoneInfo, last: bool, notice: str, duration: int
) -> None:
    """The latest (and earliest) start a scenario accepts runs to its end in any zone, with
    notices whose resets would fall past the calendar read as no reset (A6)."""
    from datetime import datetime

    naive = datetime(9998, 12, 31, 23, 59) if last else datetime(2, 1, 1, 0, 0)
    scenario = Scenario(
        start=naive.replace(tzinfo=zone),
        timezone=zone.key,
        team=parse_scenario(HEAD + "team: [{id: ana, provider: claude}]\n").team,
        calls=(("claude", (CallAnswer(stdout=notice, exit=1),)),),
        default=CallAnswer(post="ok", duration=timedelta(seconds=duration)),
    )
    try:
        result = simulate(scenario, source="t.yaml")
    except ConfigError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("t.yaml: ")
    else:
        assert result.lines and result.horizon_reached


def test_D_a_scenario_needing_too_many_events_is_refused_in_one_line() -> None:
    text = (
        HEAD + "until: 2026-12-01T12:00:00\nteam: [{id: ana, provider: claude}]\n"
        "calls:\n  default: {post: ok, duration: 60}\n"
    )
    scenario = parse_scenario(text)
    assert simulate(scenario, max_events=200).status == "running"  # 3 hours of 1-minute calls
    with pytest.raises(ConfigError) as caught:
        simulate(scenario, source="t.yaml", max_events=100)
    message = str(caught.value)
    assert message.startswith("t.yaml: the run needs more than 100 events") and "\n" not in message


def test_D_a_million_calls_is_a_clear_error_not_minutes_and_gigabytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bounded work (SPEC D): 10^6 one-minute calls (about two years) took 425 s and 3.4 GB."""
    assert _simulate_ana(tmp_path, until="2028-11-26T09:00:00") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and "events" in captured.err
