"""A scenario scripts an account's usage over time (`usage:` periods,
docs/scenarios.md), so that handing over before the limit can change what happens, and
`compare_headroom` (`autodev simulate --compare-headroom AT`) counts what limits cost a run with
the knob off and on.

The driver's rule, checked here against every call of random scenarios: a call on the provider
that is running when a limit period begins, or starts inside one, is refused with a limit until
the period's end — when the period begins, or at once; a call that ends healthy inside a
warning period carries the period's reading; every other call ends as scripted. The tally is
checked against the events `step` was fed."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers.clock import T0
from hypothesis import given, settings
from hypothesis import strategies as st

import autodev_core.simulation.driver as driver
from autodev_core import ConfigError, Engine, Participant, Policy, UsageReading
from autodev_core.scheduler.effects import StartCall
from autodev_core.scheduler.events import CallEnded
from autodev_core.simulation import simulate
from autodev_core.simulation.compare import compare_headroom
from autodev_core.simulation.driver import Tally, _simulate
from autodev_core.simulation.scenario import (
    CallAnswer,
    Scenario,
    UsagePeriod,
    parse_scenario,
    render_scenario,
)

M = timedelta(minutes=1)
ROOT = Path(__file__).resolve().parents[2]


@st.composite
def metered(draw: st.DrawFn) -> Scenario:
    team = draw(st.sampled_from((
        (Participant(id="ana", provider="claude", failover=(Engine("codex"),)),),
        (Participant(id="ana", provider="claude", failover=(Engine("codex"),)),
         Participant(id="bob", provider="codex", failover=(Engine("agy"),))),
        (Participant(id="ana", provider="claude"), Participant(id="eva", provider="agy")),
    )))
    durations = st.integers(1, 40).map(lambda n: n * M)
    calls = tuple(
        (key, tuple(CallAnswer(post="ok", duration=d)
                    for d in draw(st.lists(durations, max_size=30))))
        for key in ("claude", "codex", "agy")
    )
    usage = []
    for provider in ("claude", "codex", "agy"):
        at = draw(st.integers(0, 120))
        for _ in range(draw(st.integers(0, 4))):
            length = draw(st.integers(1, 150))
            begin, end = T0 + at * M, T0 + (at + length) * M
            if draw(st.booleans()):
                usage.append(UsagePeriod(provider, begin, end))
            else:
                usage.append(UsagePeriod(
                    provider, begin, end, warning=draw(st.sampled_from((0.5, 0.96, 0.99))),
                    window="five_hour",
                    reset=draw(st.none() | st.just(end + 30 * M))))
            at += length + draw(st.integers(0, 60))
    knob = draw(st.none() | st.just(0.95))
    return Scenario(start=T0, timezone="UTC", team=team, calls=calls,
                    default=CallAnswer(post="ok", duration=draw(durations)),
                    until=T0 + 10 * 60 * M, usage=tuple(usage), policy=Policy(headroom=knob))


def recorded(scenario: Scenario) -> tuple[list[tuple[object, object, tuple[object, ...]]], Tally]:
    """Every (event, state after, effects) of one run, and its tally."""
    seen: list[tuple[object, object, tuple[object, ...]]] = []
    real = driver.step

    def recording(state: object, event: object) -> object:
        after, effects = real(state, event)  # type: ignore[arg-type]
        seen.append((event, after, effects))
        return after, effects

    driver.step = recording  # type: ignore[assignment]
    try:
        tally = Tally()
        _simulate(scenario, "<test>", driver.MAX_EVENTS, tally)
    finally:
        driver.step = real
    return seen, tally


def expected_end(scenario: Scenario, start: datetime, engine: Engine, scripted: CallAnswer
                 ) -> tuple[str, datetime, datetime | None, UsageReading | None]:
    """The rule, stated on its own: (kind, end, a limit's reset, the reading)."""
    periods = sorted((p for p in scenario.usage if p.provider == engine.provider),
                     key=lambda p: p.start)
    end = start + scripted.duration
    for p in periods:
        if p.limit and (p.start <= start < p.end or start < p.start < end):
            return "limit", max(start, p.start), p.end, None
    for p in periods:
        if not p.limit and p.start <= end < p.end:
            assert p.warning is not None
            return "post", end, None, UsageReading(engine.provider, p.warning, p.window,
                                                   p.reset, p.threshold)
    return "post", end, None, None


@settings(max_examples=60)
@given(scenario=metered())
def test_every_call_meets_the_accounts_usage_as_the_periods_say(scenario: Scenario) -> None:
    seen, tally = recorded(scenario)
    used: dict[str, int] = {}
    pending: dict[str, tuple[str, datetime, datetime | None, UsageReading | None]] = {}
    waiting = timedelta(0)
    refused = cut = posts = 0
    lost = timedelta(0)
    started: dict[str, datetime] = {}
    for i, (event, after, effects) in enumerate(seen):
        if isinstance(event, CallEnded):
            kind, end, reset, reading = pending.pop(event.participant)
            assert (event.kind, event.now) == (kind, end)
            assert event.usage == reading
            if kind == "limit":
                assert event.limit is not None and event.limit.reset_at == reset
                refused += 1
                ran = event.now - started[event.participant]
                if ran > timedelta(0):
                    cut, lost = cut + 1, lost + ran
            posts += event.posted
        for effect in effects:
            if isinstance(effect, StartCall):
                key = str(effect.engine)
                index = used.get(key, 0)
                used[key] = index + 1
                scripted = scenario.answer(effect.engine, index)
                pending[effect.participant] = expected_end(scenario, effect.at, effect.engine,
                                                           scripted)
                started[effect.participant] = effect.at
        if after.status == "rate_limited":  # type: ignore[attr-defined]
            nxt = seen[i + 1][0].now if i + 1 < len(seen) else scenario.until  # type: ignore[attr-defined]
            assert scenario.until is not None
            waiting += min(nxt, scenario.until) - event.now  # type: ignore[attr-defined]
    assert (tally.refused, tally.cut_short, tally.lost, tally.posts) == (refused, cut, lost, posts)
    assert tally.waiting == waiting


@settings(max_examples=30)
@given(scenario=metered())
def test_periods_of_a_provider_no_call_is_on_leave_everything_as_scripted(
    scenario: Scenario,
) -> None:
    """Usage periods of a provider none of the team's engines belong to change nothing."""
    team = tuple(m for m in scenario.team if m.provider == "agy" and not m.failover)
    if not team:
        team = (Participant(id="eva", provider="agy"),)
    only_agy = Scenario(start=scenario.start, timezone="UTC", team=team, calls=scenario.calls,
                        default=scenario.default, until=scenario.until)
    metered_agy = Scenario(start=scenario.start, timezone="UTC", team=team,
                           calls=scenario.calls, default=scenario.default, until=scenario.until,
                           usage=tuple(p for p in scenario.usage if p.provider != "agy"))
    assert simulate(only_agy).render() == simulate(metered_agy).render()


WARNED_THEN_LIMITED = """\
start: 2026-12-01T09:00:00
timezone: UTC
until: 2026-12-01T14:00:00
team:
  - {id: ana, provider: claude, failover: [codex]}
  - {id: bob, provider: codex}
calls:
  default: {post: ok, duration: 1200}
usage:
  claude:
    - {from: 2026-12-01T09:30:00, to: 2026-12-01T10:30:00, warning: 0.97, window: five_hour,
       reset: 2026-12-01T12:00:00}
    - {from: 2026-12-01T10:30:00, to: 2026-12-01T12:00:00, limit: true}
"""


def test_a_running_call_meets_the_limit_when_it_begins_and_the_knob_avoids_it() -> None:
    off = simulate(parse_scenario(WARNED_THEN_LIMITED)).render()
    assert "2026-12-01T10:30:00 claude limited until 12:00" in off
    assert not any("near its limit" in line for line in off)
    on = simulate(parse_scenario(
        WARNED_THEN_LIMITED + "policy: {headroom: {hand_over_at: 0.95}}\n")).render()
    assert "2026-12-01T10:00:00 claude at 97% of its five-hour window — handing over until " \
        "12:00" in on
    assert "2026-12-01T10:20:00 ana: claude near its limit → codex" in on
    assert not any("limited until" in line for line in on)
    compared = compare_headroom(parse_scenario(WARNED_THEN_LIMITED), 0.95)
    assert (compared.off.refused, compared.off.cut_short, compared.off.lost) == (1, 1, 10 * M)
    assert (compared.on.refused, compared.on.cut_short, compared.on.lost) == (0, 0, timedelta(0))
    assert compared.on.posts == compared.off.posts + 1


def test_without_usage_periods_the_knob_changes_nothing_a_call_does_not_report() -> None:
    """The bundled per-call storm cannot show a difference: no call reports a reading."""
    text = WARNED_THEN_LIMITED.split("usage:")[0]
    compared = compare_headroom(parse_scenario(text), 0.95)
    assert compared.off == compared.on


def test_the_cli_prints_the_comparison_table(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from autodev_shell.cli import main

    path = tmp_path / "warned.yaml"
    path.write_text(WARNED_THEN_LIMITED, encoding="utf-8")
    assert main(["simulate", str(path), "--compare-headroom", "0.95"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| warned.yaml | headroom off | headroom on (hand_over_at 0.95) |"
    assert "| calls refused by a limit | 1 | 0 |" in out
    assert main(["simulate", str(path), "--compare-headroom", "1.5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hand_over_at" in err and "Traceback" not in err


@pytest.mark.parametrize(("period", "line", "message"), [
    ("{from: 2026-12-01T10:00:00, to: 2026-12-01T11:00:00}", 8,
     "usage.claude[0]: a period has either 'warning: <utilization>' (e.g. 0.97) or 'limit: true'"),
    ("{from: 2026-12-01T10:00:00, to: 2026-12-01T09:30:00, limit: true}", 8,
     "usage.claude[0].to: must be after 'from'"),
    ("{from: 2026-12-01T10:00:00, to: 2026-12-01T11:00:00, warning: 97}", 8,
     "usage.claude[0].warning: a utilization is a fraction such as 0.97"),
    ("{from: 2026-12-01T10:00:00, to: 2026-12-01T11:00:00, limit: true, window: five_hour}", 8,
     "usage.claude[0].window: belongs to a warning period"),
    ("{to: 2026-12-01T11:00:00, limit: true}", 8, "usage.claude[0]: missing required key 'from'"),
    ("{from: 2026-12-01T10:00:00, to: 2026-12-01T11:00:00, limit: true, ends: 1}", 8,
     "usage.claude[0]: unknown key 'ends'"),
])
def test_a_bad_period_is_one_line_naming_file_line_and_field(period: str, line: int,
                                                             message: str) -> None:
    text = ("start: 2026-12-01T09:00:00\ntimezone: UTC\nteam: [{id: ana, provider: claude}]\n"
            "calls:\n  default: {post: ok}\nusage:\n  claude:\n    - " + period + "\n")
    with pytest.raises(ConfigError) as info:
        parse_scenario(text, source="scen.yaml")
    assert str(info.value).startswith(f"scen.yaml:{line}: {message}"), str(info.value)


def test_overlapping_periods_and_unknown_providers_are_refused() -> None:
    head = "start: 2026-12-01T09:00:00\ntimezone: UTC\nteam: [{id: ana, provider: claude}]\n"
    with pytest.raises(ConfigError, match=r"scen.yaml:7: usage.claude\[1\]: overlaps an earlier"):
        parse_scenario(head + "usage:\n  claude:\n"
                       "    - {from: 2026-12-01T10:00:00, to: 2026-12-01T11:00:00, limit: true}\n"
                       "    - {from: 2026-12-01T10:30:00, to: 2026-12-01T12:00:00, limit: true}\n",
                       source="scen.yaml")
    with pytest.raises(ConfigError, match=r"scen.yaml:5: usage.gpt: unknown provider 'gpt'"):
        parse_scenario(head + "usage:\n  gpt: []\n", source="scen.yaml")
    with pytest.raises(ValueError, match="overlap"):
        Scenario(start=T0, timezone="UTC", team=(Participant(id="a", provider="claude"),),
                 usage=(UsagePeriod("claude", T0, T0 + 60 * M),
                        UsagePeriod("claude", T0 + 30 * M, T0 + 90 * M)))


def test_a_scenario_with_periods_renders_and_reads_back() -> None:
    scenario = parse_scenario(WARNED_THEN_LIMITED)
    assert parse_scenario(render_scenario(scenario)) == scenario
    assert [p.limit for p in scenario.usage] == [False, True]


def test_time_waiting_counts_every_participant_limited_up_to_until() -> None:
    text = """\
start: 2026-12-01T09:00:00
timezone: UTC
until: 2026-12-01T11:00:00
team: [{id: ana, provider: claude}]
calls:
  default: {post: ok, duration: 1200}
usage:
  claude:
    - {from: 2026-12-01T10:10:00, to: 2026-12-01T12:00:00, limit: true}
"""
    compared = compare_headroom(parse_scenario(text), 0.95)
    # ana's 10:00 call is cut short at 10:10; the run then waits until `until`, 11:00.
    assert (compared.off.refused, compared.off.lost, compared.off.waiting) == (
        1, 10 * M, 50 * M)
    assert compared.on == compared.off  # no reading: the knob has nothing to act on


# -- the bundled storm, docs/limits.md and docs/performance.md (docs/limits.md) ----------


def _bench() -> object:
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    import bench_headroom

    return bench_headroom


def test_the_limits_page_shows_what_the_command_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from autodev_shell.cli import main

    storm = ROOT / "docs" / "examples" / "headroom" / "storm-week.yaml"
    assert main(["simulate", str(storm), "--compare-headroom", "0.95"]) == 0
    printed = capsys.readouterr().out
    page = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
    shown = page.split("<!-- compare-headroom: begin -->\n")[1].split(
        "<!-- compare-headroom: end -->")[0]
    assert shown == printed
    # ... and the knob made a difference there (else the storm would show nothing).
    rows = {line.split(" | ")[0]: line.split(" | ")[1:] for line in printed.splitlines()}
    off, on = (int(x.strip(" |")) for x in rows["| calls refused by a limit"])
    assert on < off


def test_the_bundled_storm_is_what_its_generator_writes() -> None:
    bench = _bench()
    storm = ROOT / "docs" / "examples" / "headroom" / "storm-week.yaml"
    text = storm.read_text(encoding="utf-8")
    body = "\n".join(line for line in text.split("\n") if not line.startswith("#"))
    assert body == render_scenario(bench.usage_storm(7, per_call=False))  # type: ignore[attr-defined]


def test_the_performance_row_is_what_the_bench_measures() -> None:
    bench = _bench()
    m = bench.measure()  # type: ignore[attr-defined]
    row = bench.row(m["comparison"], m["days"])  # type: ignore[attr-defined]
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert row in page.splitlines()
    assert bench.details(m["comparison"], m["days"]) in page  # type: ignore[attr-defined]
