"""SPEC points settled in docs/scheduler.md "Choices where the SPEC is silent":
a timed-out call holding a notice (SPEC D, A1), "reachable again" on any answer (A27 vs A40), a
clock-time notice seen at its exact minute (A6, A38), and a chain naming the participant's own
primary engine (A9, C5)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.scheduler_runs import Run, at, member

from autodev_core import ConfigWarning, Engine, classify_output, read_participant
from autodev_core.participant import parse_participant
from autodev_core.scheduler import call_ended
from autodev_core.simulation import simulate
from autodev_core.simulation.scenario import parse_scenario
from autodev_shell.cli import main
from autodev_shell.team import load_team


def _run(text: str) -> list[str]:
    return list(simulate(parse_scenario(text, source="t.yaml"), source="t.yaml").render())


HEAD = "start: 2026-12-01T09:00:00\ntimezone: UTC\n"
CODEX_NOTICE = "You've hit your usage limit. Upgrade to Pro or try again at 2:30 PM."

# ------------------------------------------------------------------------------------------------
# SPEC D + A1: a call stopped at its timeout after printing a notice reported a limit


def test_D_A1_a_timed_out_call_whose_output_holds_a_notice_is_a_limit() -> None:
    """SPEC D: a `timeout: true` answer "is classified as such a real call's is"; a notice is
    the CLI reporting a limit (A1), whether the CLI then exits or hangs until it is killed.
    `<cli> timed out` is for output that says nothing else."""
    lines = _run(
        HEAD + "until: 2026-12-01T09:05:00\nteam: [{id: ana, provider: codex}]\n"
        "calls:\n  codex: [{stderr: \"You've hit your usage limit. Try again in 3 hours.\","
        " timeout: true}]\n"
    )
    assert lines[0] == "2026-12-01T09:01:00 codex limited until 12:01"
    assert not any("timed out" in line or "failed on" in line for line in lines)
    # The shell summarises the same way: the classification of the output so far, no exit code.
    now = datetime(2026, 12, 1, 9, 1, tzinfo=UTC)
    seen = classify_output("agy", stderr="Individual quota reached. Resets in 2h31m33s.",
                           exit_code=None, now=now, local_tz=UTC)
    ended = call_ended(now, "ana", Engine("agy"), seen, posted=False, exit_code=None,
                       timed_out=True)
    assert (ended.kind, ended.exit_code) == ("limit", None)
    assert ended.limit is not None and ended.limit.reset_at == now + timedelta(
        hours=2, minutes=31, seconds=33)


# ------------------------------------------------------------------------------------------------
# A27 vs A40: any answer proves the provider reachable, so any answer writes the A27 line


@pytest.mark.parametrize(
    ("kind", "next_line"),
    [
        ("exit", "ana failed on claude (claude exited with code 3); next attempt at"),
        ("timeout", "ana failed on claude (claude timed out); next attempt at"),
        ("empty", "ana failed on claude (ana ended the turn without a post); next attempt at"),
        ("login", "claude is not logged in (ana); run paused"),
        ("limit", "claude limited until 12:00"),
        ("post", "ana posted via claude"),
    ],
)
def test_A40_any_answer_ends_the_outage_with_the_A27_line(kind: str, next_line: str) -> None:
    """A40 (any answer — a crash, a notice — proves the provider reachable) wins over A27's
    "when a call on it works": the outage ends at that answer, and its end is said."""
    run = Run(member("ana", "claude"), member("bob", "claude"))
    run.start()
    run.end("network")
    run.wake()
    if kind == "exit":
        lines = run.end("exit", exit_code=3)
    elif kind == "limit":
        lines = run.end("limit", reset=at(12))
    else:
        lines = run.end(kind)
    assert lines[0] == "claude is reachable again"
    assert lines[1].startswith(next_line)
    assert run.state.outages == ()


# ------------------------------------------------------------------------------------------------
# A6 + A38: a clock time seen in its own minute is today's, probed a minute after the notice


def test_A6_A38_a_clock_time_notice_seen_at_its_exact_minute_is_probed_a_minute_later() -> None:
    """A6: a printed clock time names the start of its minute, and one read at or before now
    within 10 minutes is today's, never tomorrow's: it is probed again one minute after the
    notice. A codex call that ends at 14:30:00 saying "try again at 2:30 PM" is limited until
    14:31 (a second earlier, 14:30 still lies ahead: until 14:30)."""
    team = "team: [{id: ana, provider: codex}, {id: bob, provider: claude}]\n"
    calls = f'calls:\n  codex: [{{stdout: "{CODEX_NOTICE}", duration: 60}}]\n'
    at_minute = _run("start: 2026-12-01T14:29:00\ntimezone: UTC\n"
                     "until: 2026-12-01T14:35:00\n" + team + calls)
    assert at_minute[0] == "2026-12-01T14:30:00 codex limited until 14:31"
    second_before = _run("start: 2026-12-01T14:29:00\ntimezone: UTC\n"
                         "until: 2026-12-01T14:35:00\n" + team
                         + calls.replace("duration: 60", "duration: 59"))
    assert second_before[0] == "2026-12-01T14:29:59 codex limited until 14:30"


# ------------------------------------------------------------------------------------------------
# A9 + C5: a chain naming the participant's own primary engine warns once, with its line


OWN_PRIMARY = "---\nprovider: claude\nmodel: opus\nfailover:\n  - codex\n  - claude\n---\nhi\n"


def test_A9_a_chain_naming_the_own_primary_engine_is_a_warning_with_its_line() -> None:
    participant, warnings = read_participant(OWN_PRIMARY, id="ana", source="ana.md")
    assert participant == parse_participant(OWN_PRIMARY, id="ana", source="ana.md")
    assert participant.failover == (Engine("codex"), Engine("claude"))  # still read as written
    assert len(warnings) == 1 and isinstance(warnings[0], ConfigWarning)
    assert (warnings[0].source, warnings[0].line) == ("ana.md", 6)
    assert str(warnings[0]).startswith(
        "ana.md:6: failover entry 'claude' is this participant's own primary engine (A9)"
    )


@pytest.mark.parametrize(
    "chain",
    ["[codex, 'claude:opus']", "['claude:sonnet', codex]", "[]", "[codex, agy]"],
)
def test_A9_a_model_of_the_primary_provider_is_an_engine_of_its_own(chain: str) -> None:
    _, warnings = read_participant(
        f"---\nprovider: claude\nmodel: opus\nfailover: {chain}\n---\n", id="ana"
    )
    assert warnings == ()


def test_A9_the_warning_is_written_once_per_file_however_often_the_chain_names_it() -> None:
    _, warnings = read_participant(
        "---\nprovider: codex\nfailover: [codex, claude, codex]\n---\n", id="rui", source="r.md"
    )
    assert [str(w)[:40] for w in warnings] == ["r.md:3: failover entry 'codex' is this p"]


def test_C5_run_prints_the_warning_once_before_anything_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "ana.md").write_text(OWN_PRIMARY, encoding="utf-8")
    (team / "bob.md").write_text("---\nprovider: codex\n---\n", encoding="utf-8")
    assert [str(w)[:len(str(team))] for w in load_team(team).warnings] == [str(team)]
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty) + os.pathsep)  # no CLI: the run is refused at once
    assert main(["run", str(team), "--run", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        f"autodev: warning: {team / 'ana.md'}:6: failover entry 'claude' is this participant's "
        "own primary engine (A9): it is limited whenever the primary is, so a hop never lands "
        "on it; leave it out, or name a model ('claude:<model>' is an engine of its own)"
    )
    assert sum(line.startswith("autodev: warning:") for line in err) == 1



# ------------------------------------------------------------------------------------------------
# A18/A35/A40/A42: limits and an outage together — the A18 line and `rate_limited`


def test_A40_A42_two_limited_and_one_unreachable_wait_with_the_A18_line_as_rate_limited() -> None:
    """A40: the A27 line only when every unavailable engine is out by an outage; otherwise the
    A18 line, naming whichever comes back first (agy's retry). A42/A35: `unreachable` only when
    every engine waited for is out by an outage, so this wait is `rate_limited`."""
    run = Run(member("ana", "claude"), member("bob", "codex"), member("leo", "agy"))
    run.start()
    run.end("limit", reset=at(12))
    run.end("limit", reset=at(13))
    lines = run.end("network")
    assert lines == [
        "agy could not be reached; trying it again at 09:04",
        "every participant limited — waiting for agy, back first at 09:04",
    ]
    assert run.state.status == "rate_limited" and run.sleep.status == "rate_limited"


def test_A35_a_gated_owner_waits_as_rate_limited_unless_all_it_waits_for_is_out() -> None:
    run = Run(member("ana", "claude", "codex", "agy", gate=True), member("bob", "claude"))
    run.start()
    run.end("limit", reset=at(12))          # claude: ana hops to codex
    run.end("limit", reset=at(13))          # codex: ana hops to agy
    lines = run.end("network")              # agy out: nothing of ana's own is free
    assert lines[-1] == "ana cannot hand its turn over — waiting for agy, back at 09:04"
    assert run.state.status == "rate_limited"
    only_outages = Run(member("ana", "claude", "codex", gate=True), member("bob", "agy"))
    only_outages.start()
    only_outages.end("network")                               # 09:01 claude out until 09:02
    only_outages.end("network", after=timedelta(seconds=10))  # 09:01:10 codex out until 09:02
    assert only_outages.all_lines[-1] == (
        "ana cannot hand its turn over — waiting for claude, back at 09:02")
    assert only_outages.state.status == "unreachable"
