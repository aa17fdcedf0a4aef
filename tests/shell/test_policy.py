"""The policy as a value (C7): frozen, validated, the SPEC's numbers by default
(A6, A27-A31), settable from Python, a team's autodev.yaml and a scenario file."""

from __future__ import annotations

from datetime import timedelta

import pytest
from helpers.clock import T0

from autodev_core import (
    CallEnded,
    ConfigError,
    Engine,
    LimitNotice,
    Log,
    Participant,
    Policy,
    RunStarted,
    SchedulerConfig,
    Sleep,
    StartCall,
    Woke,
    initial_state,
    parse_scenario,
    simulate,
    step,
)
from autodev_core.serialization import from_json, to_json

S = timedelta(seconds=1)
M = timedelta(minutes=1)
H = timedelta(hours=1)


def test_the_default_policy_is_the_spec() -> None:
    policy = SchedulerConfig(team=(Participant(id="ana", provider="claude"),)).policy
    assert policy == Policy()
    # A28: 1 s after the first failure, then 1, 2, 4, 8, 15 and 30 minutes, then one hour.
    assert [policy.backoff_after(n) for n in range(1, 11)] == [
        S, M, 2 * M, 4 * M, 8 * M, 15 * M, 30 * M, H, H, H,
    ]
    assert policy.attempts == 12  # A29
    assert policy.empty_turns == 3  # A31
    # A27: 1, 2, 4, 8 minutes, then every 15 minutes.
    assert [policy.outage_retry_after(n) for n in range(1, 8)] == [
        M, 2 * M, 4 * M, 8 * M, 15 * M, 15 * M, 15 * M,
    ]
    # A6: claude waits an hour, codex and agy probe every 30 minutes.
    assert [policy.default_limit_wait(p) for p in ("claude", "codex", "agy")] == [
        H, 30 * M, 30 * M,
    ]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"attempts": 0}, "attempts"),
        ({"empty_turns": -1}, "empty_turns"),
        ({"attempts": True}, "attempts"),
        ({"wait": (S, timedelta(0))}, "wait[1]"),
        ({"wait_max": -S}, "wait_max"),
        ({"outage_wait": (M, 10**6 * H)}, "outage_wait[1]"),
        ({"outage_wait_max": timedelta(0)}, "outage_wait_max"),
        ({"limit_wait": {"gemini": H}}, "gemini"),
        ({"limit_wait": {"codex": timedelta(0)}}, "limit_wait['codex']"),
    ],
)
def test_a_bad_policy_is_refused_naming_the_field(fields: dict[str, object], named: str) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        Policy(**fields)  # type: ignore[arg-type]
    assert named in str(raised.value)


def test_a_partial_limit_wait_keeps_the_other_defaults_and_the_policy_is_frozen() -> None:
    policy = Policy(limit_wait={"codex": 5 * M})
    assert policy.default_limit_wait("codex") == 5 * M
    assert policy.default_limit_wait("claude") == H
    with pytest.raises(AttributeError):
        policy.attempts = 3  # type: ignore[misc]
    assert hash(policy) == hash(Policy(limit_wait={"codex": 5 * M}))
    config = SchedulerConfig(team=(Participant(id="ana", provider="claude"),), policy=policy)
    assert from_json(to_json(initial_state(config)), type(initial_state(config))).config == config


def _failing_run(policy: Policy) -> list[object]:
    """ana fails every call; return every effect until the run pauses."""
    config = SchedulerConfig(team=(Participant(id="ana", provider="codex"),), policy=policy)
    state, effects = step(initial_state(config), RunStarted(now=T0))
    seen: list[object] = list(effects)
    now = T0
    for _ in range(50):
        if state.status == "paused":
            break
        if state.status == "backing_off":
            assert state.wait_until is not None
            now = state.wait_until
            state, effects = step(state, Woke(now=now))
        else:
            now += 10 * S
            state, effects = step(state, CallEnded(now=now, participant="ana",
                                                   engine=Engine("codex"), kind="exit",
                                                   exit_code=1))
        seen.extend(effects)
    assert state.status == "paused"
    return seen


def test_a_custom_backoff_and_give_up_count_are_used_and_the_log_says_so() -> None:
    policy = Policy(wait=(5 * S, 7 * S), wait_max=11 * S, attempts=4)
    effects = _failing_run(policy)
    sleeps = [e for e in effects if isinstance(e, Sleep)]
    # Waits measured from each failed call's end (A38): 5 s, 7 s, then the cap.
    starts = [e.at for e in effects if isinstance(e, StartCall)]
    assert [s.until - (start + 10 * S) for s, start in zip(sleeps, starts, strict=False)] == [
        5 * S, 7 * S, 11 * S,
    ]
    last = [e for e in effects if isinstance(e, Log)][-1]
    assert last.message.startswith("Gave up after 4 failed attempts in a row, over 23 seconds (")
    assert last.count == 4


def test_a_custom_default_reset_is_the_wait_of_a_notice_without_one() -> None:
    config = SchedulerConfig(
        team=(Participant(id="ana", provider="codex"),),
        policy=Policy(limit_wait={"codex": 5 * M}),
    )
    state, _ = step(initial_state(config), RunStarted(now=T0))
    notice = LimitNotice(provider="codex", reset_at=None, text="Try again later.")
    state, effects = step(state, CallEnded(now=T0 + M, participant="ana",
                                           engine=Engine("codex"), kind="limit", limit=notice))
    assert state.limits[0].until == T0 + 6 * M
    assert any(isinstance(e, Sleep) and e.until == T0 + 6 * M for e in effects)


SCENARIO = """\
start: 2026-12-01T09:00:00
timezone: UTC
until: 2026-12-01T12:00:00
team:
  - {id: ana, provider: codex}
calls:
  default: {stdout: "", exit: 0}
policy:
  empty_turns: 2
  wait: [30]
"""


def test_a_scenario_sets_the_policy() -> None:
    result = simulate(parse_scenario(SCENARIO))
    lines = [line.message for line in result.lines]
    assert lines[-1] == (
        "ana ended 2 turns in a row without a post; run paused — resume to try again."
    )
    assert "next attempt at 09:01" in lines[0]  # 60 s call, then the 30 s wait: 09:01:30


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ("attempts: 0", "policy.attempts"),
        ("wait: [1, -2]", "policy.wait[1]"),
        ("limit_wait: {gemini: 60}", "policy.limit_wait"),
        ("backoff: [1]", "policy.backoff"),
        ("wait_max: forever", "policy.wait_max"),
    ],
)
def test_a_bad_policy_in_a_scenario_names_the_file_line_and_field(policy: str, field: str) -> None:
    text = SCENARIO.split("policy:")[0] + "policy:\n  " + policy + "\n"
    with pytest.raises(ConfigError) as raised:
        parse_scenario(text, source="s.yaml")
    message = str(raised.value)
    assert "s.yaml" in message and field in message
    assert ":9" in message or ":10" in message  # the line of the policy


def _team(tmp_path: object, settings: str) -> object:
    from pathlib import Path

    root = Path(str(tmp_path)) / "team"
    root.mkdir()
    (root / "ana.md").write_text("---\nprovider: claude\n---\nReview.\n", encoding="utf-8")
    (root / "autodev.yaml").write_text(settings, encoding="utf-8")
    return root


def test_a_teams_run_settings_set_the_policy(tmp_path: object) -> None:
    from autodev_shell.team import load_team

    root = _team(tmp_path, "timezone: UTC\npolicy:\n  attempts: 5\n  limit_wait: {claude: 600}\n")
    team = load_team(root)  # type: ignore[arg-type]
    assert team.policy == Policy(attempts=5, limit_wait={"claude": 10 * M})


def test_a_bad_policy_in_run_settings_is_one_line_naming_file_line_and_field(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from autodev_shell.cli import main

    root = _team(tmp_path, "timezone: UTC\npolicy:\n  wait: [1, 0]\n")
    code = main(["run", str(root), "--run", str(root) + "-run"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "autodev.yaml:2" in err and "policy.wait[1]" in err
