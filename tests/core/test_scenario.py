"""Scenario files for `autodev simulate` (SPEC D "Scenario files", C6): a strict parser.

Every error names the source, the line and the field path (C5 applied to scenarios).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from autodev_core.engine import PROVIDERS, Engine
from autodev_core.errors import ConfigError
from autodev_core.participant import Participant
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml
from autodev_core.simulation.scenario import (
    DEFAULT_CALL_DURATION,
    OK_ANSWER,
    CallAnswer,
    PeerReport,
    Scenario,
    UsagePeriod,
    parse_scenario,
    render_scenario,
)

LISBON = ZoneInfo("Europe/Lisbon")

SPEC_EXAMPLE = """\
start: 2026-12-01T09:00:00        # local wall-clock time in `timezone`
timezone: Europe/Lisbon           # the machine's zone (codex clock times are read in it)
installed: [claude, codex, agy]   # CLIs on the machine; default all three
max_iterations: 500               # optional; calls made, as in A30
until: 2026-12-01T18:00:00        # stop here (local), or when the run pauses or stops
team:                             # turn order = list order, round robin
  - id: ana
    provider: claude
    model: opus
    failover: [codex, "claude:sonnet"]
  - id: rui
    provider: codex
    gate: false                   # true: this participant has a pending gate (A16)
calls:                            # per engine, consumed in order; then `default`
  claude:
    - {stdout: "You've hit your limit · resets 2:30pm (Europe/Lisbon)", exit: 1}
  codex:
    - {stderr: "getaddrinfo ENOTFOUND api.openai.com", exit: 1}
    - {post: "review done"}
  default: {post: "ok", duration: 60}
messages: [2026-12-01T10:00:00]   # times a user message arrives (A30)
"""

MINIMAL = """\
start: 2026-12-01T09:00:00
timezone: Europe/Lisbon
team:
  - {id: ana, provider: claude}
"""


def _error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_scenario(text, source="scen.yaml")
    return info.value


# ------------------------------------------------------------------------------------------
# What a scenario file means


def test_D_spec_example_parses_field_by_field() -> None:
    scenario = parse_scenario(SPEC_EXAMPLE, source="spec.yaml")
    assert scenario.start == datetime(2026, 12, 1, 9, 0, tzinfo=LISBON)
    assert scenario.start.tzinfo == LISBON
    assert scenario.timezone == "Europe/Lisbon"
    assert scenario.zone == LISBON
    assert scenario.installed == frozenset({"claude", "codex", "agy"})
    assert scenario.max_iterations == 500
    assert scenario.until == datetime(2026, 12, 1, 18, 0, tzinfo=LISBON)
    assert scenario.team == (
        Participant(
            id="ana", provider="claude", model="opus",
            failover=(Engine("codex"), Engine("claude", "sonnet")),
        ),
        Participant(id="rui", provider="codex"),
    )
    assert [key for key, _answers in scenario.calls] == ["claude", "codex"]
    assert scenario.answers_for("claude") == (
        CallAnswer(stdout="You've hit your limit · resets 2:30pm (Europe/Lisbon)", exit=1),
    )
    assert scenario.answers_for(Engine("codex")) == (
        CallAnswer(stderr="getaddrinfo ENOTFOUND api.openai.com", exit=1),
        CallAnswer(post="review done"),
    )
    assert scenario.default == CallAnswer(post="ok", duration=timedelta(seconds=60))
    assert scenario.messages == (datetime(2026, 12, 1, 10, 0, tzinfo=LISBON),)


def test_D_defaults_installed_all_three_no_bounds_no_calls() -> None:
    scenario = parse_scenario(MINIMAL)
    assert scenario.installed == frozenset(PROVIDERS)
    assert scenario.max_iterations is None
    assert scenario.until is None
    assert scenario.calls == ()
    assert scenario.default is None
    assert scenario.messages == ()


def test_D_call_answer_defaults() -> None:
    answer = CallAnswer(post=None)
    assert (answer.stdout, answer.stderr, answer.exit, answer.timeout) == ("", "", 0, False)
    assert answer.duration == DEFAULT_CALL_DURATION == timedelta(seconds=60)
    assert not CallAnswer(post="").posted
    assert CallAnswer(post="done").posted


@pytest.mark.parametrize(
    "fields",
    [{"exit": True}, {"exit": "1"}, {"exit": 1.0}, {"exit": None}, {"stdout": None},
     {"stderr": b"quota"}, {"post": 3}, {"timeout": 1}, {"timeout": "yes"},
     {"duration": 60}],
)
def test_D_a_call_answer_of_the_wrong_type_cannot_exist(fields: dict[str, object]) -> None:
    # SPEC D's answer: `post` text or none, `stdout`/`stderr` text, `exit` an integer (true is
    # not an exit code), `timeout` true or false, `duration` a length of time.
    with pytest.raises(TypeError, match=next(iter(fields))):
        CallAnswer(**fields)  # type: ignore[arg-type]


def test_D_answers_per_engine_then_default_then_ok() -> None:
    scenario = parse_scenario(SPEC_EXAMPLE)
    assert scenario.answer("codex", 0).exit == 1
    assert scenario.answer("codex", 1).post == "review done"
    assert scenario.answer("codex", 2) == scenario.default
    # Lists are per engine exactly (A9): claude:sonnet has none of its own.
    assert scenario.answer("claude:sonnet", 0) == scenario.default
    no_default = parse_scenario(MINIMAL)
    assert no_default.answer("claude", 0) == OK_ANSWER == CallAnswer(post="ok")


def test_D_times_as_yaml_timestamps_or_strings_are_the_same() -> None:
    quoted = MINIMAL.replace("2026-12-01T09:00:00", '"2026-12-01 09:00"')
    assert parse_scenario(quoted) == parse_scenario(MINIMAL)


def test_D_local_time_is_read_in_the_scenario_zone() -> None:
    scenario = parse_scenario(MINIMAL.replace("Europe/Lisbon", "America/New_York"))
    assert scenario.start.utcoffset() == timedelta(hours=-5)
    assert scenario.start.hour == 9


def test_D_messages_are_sorted() -> None:
    text = MINIMAL + "messages: [2026-12-01T11:00:00, '2026-12-01T10:00:00']\n"
    assert [m.hour for m in parse_scenario(text).messages] == [10, 11]


def test_D_engine_keys_are_written_canonically() -> None:
    text = MINIMAL + "calls:\n  ' claude : sonnet ': [{post: hi}]\n"
    assert parse_scenario(text).answers_for("claude:sonnet") == (CallAnswer(post="hi"),)


# ------------------------------------------------------------------------------------------
# Errors: source, line, field path


def test_D_error_names_source_line_and_field_path() -> None:
    text = """\
start: 2026-12-01T09:00:00
timezone: Europe/Lisbon
team:
  - id: ana
    provider: claude
  - id: rui
    provider: codex
    failover:
      - gpt
"""
    error = _error(text)
    assert str(error) == (
        "scen.yaml:9: team[1].failover[0]: unknown provider 'gpt' (known: claude, codex, agy)"
    )
    assert (error.source, error.line) == ("scen.yaml", 9)


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [("max_iteration", "max_iterations"), ("timzone", "timezone"), ("mesages", "messages")],
)
def test_D_unknown_top_level_key_is_a_typo(typo: str, suggestion: str) -> None:
    error = _error(MINIMAL + f"{typo}: 3\n")
    assert error.line == 5
    assert f"unknown key {typo!r}" in str(error)
    assert f"did you mean {suggestion!r}" in str(error)


def test_D_top_level_default_points_under_calls() -> None:
    error = _error(MINIMAL + "default: {post: ok}\n")
    assert error.line == 5
    assert "the default answer goes under 'calls'" in str(error)


def test_C5_unknown_member_key_is_a_typo() -> None:
    error = _error(MINIMAL + "  - id: rui\n    provider: codex\n    modle: o3\n")
    assert str(error).startswith("scen.yaml:7: team[1]: unknown key 'modle'")
    assert "did you mean 'model'" in str(error)


def test_D_unknown_answer_key_is_a_typo() -> None:
    error = _error(MINIMAL + "calls:\n  claude:\n    - {post: ok, exitt: 1}\n")
    assert str(error).startswith("scen.yaml:7: calls.claude[0]: unknown key 'exitt'")


@pytest.mark.parametrize(
    ("extra", "line", "expected"),
    [
        ("max_iterations: many\n", 5, "max_iterations: expected a whole number, not the text"),
        ("max_iterations: 0\n", 5, "max_iterations: must be at least 1, not 0"),
        ("max_iterations: true\n", 5, "max_iterations: expected a whole number"),
        ("installed: claude\n", 5, "installed: 'installed' must be a list"),
        ("calls:\n  claude: [{exit: '1'}]\n", 6, "calls.claude[0].exit: expected a whole number"),
        ("calls:\n  claude: [{post: 5}]\n", 6, "calls.claude[0].post: expected text, not the"),
        ("calls:\n  claude: [{timeout: maybe}]\n", 6, "calls.claude[0].timeout: expected true"),
        ("calls:\n  claude: [{duration: 60s}]\n", 6, "calls.claude[0].duration: expected a number"),
        ("calls:\n  claude: [{stdout: [a, b]}]\n", 6, "calls.claude[0].stdout: expected a single"),
        ("calls:\n  claude: {post: ok}\n", 6, "calls.claude: an engine's answers are a list"),
        ("calls: [claude]\n", 5, "calls: 'calls' must map engines to lists of answers"),
        ("messages: 2026-12-01T10:00:00\n", 5, "messages: 'messages' must be a list"),
        ("team2: []\n", 5, "unknown key 'team2'"),
    ],
)
def test_D_wrong_types_are_errors(extra: str, line: int, expected: str) -> None:
    error = _error(MINIMAL + extra)
    assert error.line == line
    assert error.reason.startswith(expected), error.reason


def test_C5_member_gate_must_be_a_boolean() -> None:
    error = _error(MINIMAL.replace("provider: claude}", "provider: claude, gate: maybe}"))
    assert str(error) == "scen.yaml:4: team[0].gate: expected true or false, not the text 'maybe'"


def test_C5_member_model_must_be_text() -> None:
    error = _error(MINIMAL.replace("provider: claude}", "provider: claude, model: 4}"))
    assert "team[0].model: 'model' must be a non-empty string" in str(error)


def test_C5_member_id_is_required_and_well_formed() -> None:
    assert "team[0]: missing required key 'id'" in str(
        _error(MINIMAL.replace("id: ana, ", ""))
    )
    assert "team[0].id: malformed participant id 'a b'" in str(
        _error(MINIMAL.replace("id: ana", "id: a b"))
    )


def test_C5_duplicate_ids_are_refused_at_the_second() -> None:
    error = _error(MINIMAL + "  - id: ana\n    provider: codex\n")
    assert str(error) == "scen.yaml:5: team[1].id: duplicate id 'ana'"


def test_D_team_needs_a_member() -> None:
    assert "team: the team needs at least one member" in str(
        _error(MINIMAL.split("team:")[0] + "team: []\n")
    )


@pytest.mark.parametrize("key", ["start", "timezone", "team"])
def test_D_required_keys(key: str) -> None:
    lines = [line for line in MINIMAL.splitlines() if not line.startswith(key)]
    if key == "team":
        lines = lines[:2]
    error = _error("\n".join(lines) + "\n")
    assert f"missing required key {key!r}" in str(error)


@pytest.mark.parametrize("zone", ["Europe/Lisboa", "CET+1", "", "../etc/passwd", "+01:00"])
def test_D_bad_zone(zone: str) -> None:
    error = _error(MINIMAL.replace("Europe/Lisbon", repr(zone)))
    assert error.line == 2
    assert error.reason.startswith("timezone: ")
    assert "time zone" in error.reason or "expected text" in error.reason


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-13-01T09:00:00", "cannot read '2026-13-01T09:00:00': month must be in 1..12"),
        ("'2026-02-30T09:00:00'", "expected a local date-time"),
        ("'yesterday'", "expected a local date-time such as 2026-12-01T09:00:00, not 'yesterday'"),
        ("2026-12-01", "2026-12-01 is a date; write a date and time"),
        ("1764579600", "expected a local date-time such as 2026-12-01T09:00:00, not the number"),
    ],
)
def test_D_bad_date(value: str, expected: str) -> None:
    error = _error(MINIMAL.replace("2026-12-01T09:00:00", value))
    assert error.line == 1
    assert error.reason.startswith("start: " + expected), error.reason


@pytest.mark.parametrize(
    "value", ["2026-12-01T09:00:00Z", "2026-12-01T09:00:00+01:00", "'2026-12-01T09:00:00+00:00'"]
)
def test_D_aware_times_are_refused_the_file_is_local_time(value: str) -> None:
    error = _error(MINIMAL.replace("2026-12-01T09:00:00", value))
    assert error.reason.startswith("start: write a local time in Europe/Lisbon without a UTC")


def test_D_time_skipped_or_repeated_by_a_clock_change_is_refused() -> None:
    skipped = _error(MINIMAL.replace("2026-12-01T09:00:00", "2026-03-29T01:30:00"))
    assert "does not exist in Europe/Lisbon" in str(skipped)
    repeated = _error(MINIMAL.replace("2026-12-01T09:00:00", "2026-10-25T01:30:00"))
    assert "happens twice in Europe/Lisbon" in str(repeated)


def test_D_until_must_be_after_start() -> None:
    error = _error(MINIMAL + "until: 2026-12-01T09:00:00\n")
    assert str(error) == "scen.yaml:5: until: must be after 'start'"


def test_D_messages_must_fall_inside_the_run() -> None:
    before = _error(MINIMAL + "messages: [2026-12-01T08:00:00]\n")
    assert str(before) == "scen.yaml:5: messages[0]: a message cannot arrive before 'start'"
    after = _error(MINIMAL + "until: 2026-12-01T10:00:00\nmessages:\n  - 2026-12-01T11:00:00\n")
    assert str(after).startswith("scen.yaml:7: messages[0]: a message after 'until'")


@pytest.mark.parametrize(
    ("extra", "line", "expected"),
    [
        ("installed: [claude, gpt]\n", 5, "installed[1]: unknown provider 'gpt'"),
        ("installed: [claude, claude]\n", 5, "installed[1]: 'claude' is listed twice"),
        (
            "installed: [codex]\n", 4,
            "team[0].provider: no CLI of claude is installed (installed: codex)",
        ),
    ],
)
def test_D_installed_names_providers(extra: str, line: int, expected: str) -> None:
    error = _error(MINIMAL + extra)
    assert error.line == line
    assert error.reason.startswith(expected), error.reason


def test_C5_unknown_primary_provider() -> None:
    error = _error(MINIMAL.replace("provider: claude", "provider: gemini"))
    assert str(error) == (
        "scen.yaml:4: team[0].provider: unknown provider 'gemini' (known: claude, codex, agy)"
    )


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("gpt", "calls.gpt: unknown provider 'gpt'"),
        ("'claude:'", "calls.claude:: bad engine 'claude:': engine 'claude:' has an empty model"),
        ("'claude:so net'", "calls.claude:so net: bad engine"),
        ("7", "calls.7: an engine is written 'provider[:model]', not the number 7"),
    ],
)
def test_D_bad_engine_key_in_calls(key: str, expected: str) -> None:
    error = _error(MINIMAL + f"calls:\n  {key}: [{{post: ok}}]\n")
    assert error.line == 6
    assert error.reason.startswith(expected), error.reason


def test_D_engine_written_twice_in_calls() -> None:
    error = _error(MINIMAL + "calls:\n  claude: []\n  ' claude': []\n")
    assert str(error) == "scen.yaml:7: calls. claude: engine 'claude' is written twice"


def test_D_default_must_be_a_single_answer() -> None:
    error = _error(MINIMAL + "calls:\n  default: [{post: ok}]\n")
    assert str(error).startswith(
        "scen.yaml:6: calls.default: 'default' is a single answer such as {post: ok}, not a list"
    )
    scalar = _error(MINIMAL + "calls:\n  default: ok\n")
    assert "calls.default: a call answer must be a mapping" in str(scalar)


def test_D_negative_or_infinite_duration_is_refused() -> None:
    error = _error(MINIMAL + "calls:\n  codex:\n    - {post: ok}\n    - {duration: -5}\n")
    assert str(error) == (
        "scen.yaml:8: calls.codex[1].duration: a duration cannot be negative (-5 s)"
    )
    assert "finite" in str(_error(MINIMAL + "calls:\n  default: {duration: .inf}\n"))
    with pytest.raises(ValueError, match="negative"):
        CallAnswer(post=None, duration=timedelta(seconds=-1))


def test_D_timeout_with_an_exit_code_or_a_post_is_refused() -> None:
    error = _error(MINIMAL + "calls:\n  default: {timeout: true, exit: 1}\n")
    assert "calls.default.exit: a call that timed out is killed" in str(error)
    error = _error(MINIMAL + "calls:\n  default: {timeout: true, post: done}\n")
    assert "calls.default.post: a call that timed out posted nothing" in str(error)


def test_D_keys_written_twice_are_refused() -> None:
    error = _error(MINIMAL + "start: 2026-12-01T10:00:00\n")
    assert str(error) == "scen.yaml:5: start: is written twice"


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("", 1, "the scenario is empty"),
        ("# only a comment\n", 1, "the scenario is empty"),
        ("- a\n- b\n", 1, "a scenario must be a mapping"),
        ("start: [\n", 2, "invalid YAML"),
        ("a: 1\n---\nb: 2\n", 2, "invalid YAML"),
        ("timezone: UTC\nteam: []\nstart: !!python/object:os.system x\n", 3,
         "start: cannot read this value"),
    ],
)
def test_D_malformed_files(text: str, line: int, expected: str) -> None:
    error = _error(text)
    assert error.line == line
    assert expected in error.reason, error.reason


def test_D_scenario_value_refuses_naive_times_and_until_before_start() -> None:
    member = Participant(id="ana", provider="claude")
    with pytest.raises(ValueError, match="aware"):
        Scenario(start=datetime(2026, 12, 1, 9), timezone="UTC", team=(member,))
    start = datetime(2026, 12, 1, 9, tzinfo=LISBON)
    with pytest.raises(ValueError, match="after start"):
        Scenario(start=start, timezone="Europe/Lisbon", team=(member,), until=start)
    with pytest.raises(ValueError, match="at least one member"):
        Scenario(start=start, timezone="Europe/Lisbon")
    with pytest.raises(ValueError, match="unknown time zone"):
        Scenario(start=start, timezone="Mars/Olympus", team=(member,))


# ------------------------------------------------------------------------------------------
# Round trips (SPEC 0.3)

ZONES = ("UTC", "Europe/Lisbon", "America/New_York", "Asia/Kolkata")
_texts = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="\ufeff\u2028\u2029"
    )
    | st.just("\n"),
    max_size=40,
)
_answers = st.builds(
    CallAnswer,
    post=st.none() | _texts,
    stdout=_texts,
    stderr=_texts,
    exit=st.integers(-255, 255),
    timeout=st.just(False),
    duration=st.integers(0, 10**7).map(lambda ms: timedelta(milliseconds=ms)),
) | st.builds(
    CallAnswer, post=st.none(), stdout=_texts, stderr=_texts, timeout=st.just(True),
    duration=st.integers(0, 7200).map(lambda s: timedelta(seconds=s)),
)
_models = st.from_regex(r"[a-z][a-z0-9.\-]{0,8}", fullmatch=True)
_engines = st.builds(Engine, provider=st.sampled_from(PROVIDERS), model=st.none() | _models)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    zone_name = draw(st.sampled_from(ZONES))
    zone = ZoneInfo(zone_name)

    def local(naive: datetime) -> datetime:
        aware = naive.replace(tzinfo=zone)
        # Only times that happen exactly once on the wall clock can be written in a file.
        assume(aware.astimezone(ZoneInfo("UTC")).astimezone(zone).replace(tzinfo=None) == naive)
        assume(aware.utcoffset() == naive.replace(tzinfo=zone, fold=1).utcoffset())
        return aware

    naive_start = draw(
        st.datetimes(datetime(2020, 1, 1), datetime(2035, 1, 1)).map(
            lambda d: d.replace(microsecond=0)
        )
    )
    start = local(naive_start)
    until = None
    if draw(st.booleans()):
        until = local(naive_start + timedelta(seconds=draw(st.integers(1, 10**6))))
    installed = draw(st.frozensets(st.sampled_from(PROVIDERS), min_size=1))
    ids = draw(st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1,
                        max_size=4, unique=True))
    team = tuple(
        Participant(
            id=member_id,
            provider=draw(st.sampled_from(sorted(installed))),
            model=draw(st.none() | _models),
            failover=tuple(draw(st.lists(_engines, max_size=3))),
            gate=draw(st.booleans()),
        )
        for member_id in ids
    )
    keys = draw(st.lists(_engines.map(str), max_size=4, unique=True))
    calls = tuple((key, tuple(draw(st.lists(_answers, max_size=3)))) for key in keys)
    horizon = (until - start) if until is not None else timedelta(days=3)
    offsets = draw(st.lists(st.integers(0, int(horizon.total_seconds())), max_size=4))
    messages = tuple(
        local(naive_start + timedelta(seconds=offset)) for offset in offsets
    )
    peers = []
    for offset in draw(st.lists(st.integers(0, int(horizon.total_seconds())), max_size=3)):
        reset = None
        if draw(st.booleans()):
            reset = local(naive_start + timedelta(seconds=offset + draw(st.integers(1, 10**5))))
        peers.append(PeerReport(
            at=local(naive_start + timedelta(seconds=offset)),
            engine=draw(_engines),
            reset=reset,
            source=draw(st.sampled_from(("another run", "laptop", "ci runner"))),
        ))
    usage = []  # issue 25: each provider's periods follow each other, never overlapping
    for provider in draw(st.lists(st.sampled_from(PROVIDERS), max_size=3, unique=True)):
        at = draw(st.integers(0, 10**5))
        for _ in range(draw(st.integers(1, 3))):
            length = draw(st.integers(1, 10**5))
            begin = local(naive_start + timedelta(seconds=at))
            end = local(naive_start + timedelta(seconds=at + length))
            if draw(st.booleans()):
                usage.append(UsagePeriod(provider, begin, end))
            else:
                reset = None
                if draw(st.booleans()):
                    reset = local(naive_start + timedelta(seconds=at + draw(
                        st.integers(1, 10**6))))
                usage.append(UsagePeriod(
                    provider, begin, end,
                    warning=draw(st.sampled_from((0.0, 0.5, 0.97, 1, 1.25))),
                    window=draw(st.sampled_from(("", "five_hour", "seven_day"))),
                    reset=reset,
                    threshold=draw(st.none() | st.sampled_from((0.75, 0.9)))))
            at += length + draw(st.integers(0, 10**4))
    return Scenario(
        usage=tuple(usage),
        start=start,
        timezone=zone_name,
        installed=installed,
        max_iterations=draw(st.none() | st.integers(1, 10**6)),
        until=until,
        team=team,
        calls=calls,
        default=draw(st.none() | _answers),
        messages=messages,
        peers=tuple(peers),
    )


@given(scenarios())
def test_D_parse_of_render_is_identity(scenario: Scenario) -> None:
    text = render_scenario(scenario)
    assert parse_scenario(text) == scenario


@given(scenarios())
def test_0_3_scenario_round_trips_through_json_and_yaml(scenario: Scenario) -> None:
    assert from_json(to_json(scenario), Scenario) == scenario
    assert from_yaml(to_yaml(scenario), Scenario) == scenario


@given(scenarios())
def test_D_every_time_is_expressed_in_the_scenario_zone(scenario: Scenario) -> None:
    back = from_json(to_json(scenario), Scenario)
    stamps = [back.start, *back.messages] + ([back.until] if back.until else [])
    assert all(stamp.tzinfo == scenario.zone for stamp in stamps)
    assert list(back.messages) == sorted(back.messages)


def test_0_3_spec_example_round_trips() -> None:
    scenario = parse_scenario(SPEC_EXAMPLE)
    assert from_json(to_json(scenario), Scenario) == scenario
    assert from_yaml(to_yaml(scenario), Scenario) == scenario
    assert parse_scenario(render_scenario(scenario)) == scenario


def test_A12_a_missing_primary_cli_is_skipped_like_any_entry() -> None:
    text = (
        "start: 2026-12-01T09:00:00\ntimezone: Europe/Lisbon\ninstalled: [codex]\n"
        "until: 2026-12-01T09:03:00\n"
        "team:\n  - {id: ana, provider: claude, model: opus, failover: [codex]}\n"
    )
    scenario = parse_scenario(text, source="scen.yaml")
    from autodev_core.simulation import simulate

    lines = simulate(scenario).render()
    assert lines[0].endswith("ana posted via codex")
