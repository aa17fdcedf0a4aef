"""`autodev simulate` of a 30-day limit storm: the command's wall time, and `simulate`'s own pace.

Six participants (chains of one to three engines) run for 30 simulated days; about one call in
four answers with a real limit notice (claude, codex and agy wording, read through
`classify_output` as real output is, SPEC D), some with network errors or failed exits, the rest
post after 1-15 minutes. What a user waits for is the command: the storm is written to a
scenario file (each engine's answers cut to the first `used_answers` the run reads, so the file
holds what the simulation uses and simulates the same), and each round times
`autodev simulate FILE` in a fresh interpreter, on the wall clock, beside `python -c pass`; in
the same rounds, in this process and in CPU time, the file's parse (`parse_scenario`) alone.

Each round also times one whole `simulate` and, beside it, a trivial Python
loop (`for _ in range(n): total += 1`), so the baseline-relative figure — events/s divided by
loop iterations/s — cancels the machine's noise (context: the former target was 50,000
events/s on one core).

Each round also runs `simulate` with `step` replaced by a replay of what it returned in a first
run: that is the simulation's own cost (the scripted answers, their classification, the
events, the loop) without `step`'s, reported in µs per event and as `step`'s share of the time.

    python bench/bench_simulation.py [--rounds N] [--days D] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
from bench_decision import cpu_time, median_ratio, timed_rounds
from common import storm_calls

import autodev_core.simulation.driver as simulation
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler.effects import Effect
from autodev_core.scheduler.events import Event
from autodev_core.scheduler.state import SchedulerState
from autodev_core.simulation import parse_scenario, render_scenario, simulate
from autodev_core.simulation.scenario import Scenario

#: The former target of `simulate`'s pace, on one core (context).
TARGET_EVENTS_PER_S = 50_000
DAYS = 30
LOOP_ITERATIONS = 2_000_000
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

TEAM = (
    Participant(id="ana", provider="claude", model="opus",
                failover=(Engine("codex"), Engine("claude", "sonnet"))),
    Participant(id="rui", provider="codex", failover=(Engine("agy"),)),
    Participant(id="eva", provider="agy", failover=(Engine("claude", "haiku"),)),
    Participant(id="leo", provider="claude", failover=(Engine("agy"),)),
    Participant(id="mia", provider="codex"),
    Participant(id="noa", provider="claude", model="sonnet", failover=(Engine("codex"),)),
)


def storm_scenario(days: int = DAYS, seed: int = 11) -> Scenario:
    """`days` of TEAM where about one call in four reports a limit."""
    return Scenario(start=START, timezone="Europe/Lisbon", team=TEAM,
                    calls=storm_calls(TEAM, random.Random(seed), 600 * days),
                    until=START + timedelta(days=days))


def simulation_rate(scenario: Scenario, facts: dict[str, Any]) -> Callable[[], float]:
    """Seconds per event of one whole simulation (the reciprocal of events/s)."""

    def run() -> float:
        began = cpu_time()
        result = simulate(scenario)
        took = cpu_time() - began
        facts.update(events=result.events, calls=result.calls, lines=len(result.lines),
                     status=result.status,
                     limits=sum(" limited until " in line.message for line in result.lines))
        return took / result.events

    return run


def step_outcomes(scenario: Scenario) -> list[tuple[SchedulerState, tuple[Effect, ...]]]:
    """What `step` returned, in order, over one simulation of `scenario`."""
    outcomes: list[tuple[SchedulerState, tuple[Effect, ...]]] = []
    real = simulation.step

    def recording(state: SchedulerState, event: Event) -> Any:
        outcome = real(state, event)
        outcomes.append(outcome)
        return outcome

    simulation.step = recording
    try:
        simulate(scenario)
    finally:
        simulation.step = real
    return outcomes


def without_step_rate(
    scenario: Scenario, outcomes: list[tuple[SchedulerState, tuple[Effect, ...]]]
) -> Callable[[], float]:
    """Seconds per event of `simulate` with `step` replaced by a replay of its outcomes."""

    def run() -> float:
        replay = iter(outcomes)
        real = simulation.step
        simulation.step = lambda _state, _event: next(replay)
        try:
            began = cpu_time()
            simulate(scenario)
            took = cpu_time() - began
        finally:
            simulation.step = real
        return took / len(outcomes)

    return run


def loop_rate(iterations: int = LOOP_ITERATIONS) -> Callable[[], float]:
    """Seconds per iteration of the most trivial Python loop there is: the machine's pace."""

    def run() -> float:
        total = 0
        began = cpu_time()
        for _ in range(iterations):
            total += 1
        return (cpu_time() - began) / total

    return run


def used_answers(scenario: Scenario) -> Scenario:
    """`scenario` with each engine's answers cut to the fewest that simulate the same (the
    storm scripts far more than a run reads)."""
    whole = simulate(scenario).lines

    def cut(n: int) -> Scenario:
        return attrs.evolve(scenario, calls=tuple((k, a[:n]) for k, a in scenario.calls))

    low, high = 1, max(len(answers) for _, answers in scenario.calls)
    while low < high:
        middle = (low + high) // 2
        if simulate(cut(middle)).lines == whole:
            high = middle
        else:
            low = middle + 1
    return cut(low)


def _autodev() -> list[str]:
    """The console script next to this interpreter, as a user runs it; else `-m`."""
    script = Path(sys.executable).parent / "autodev"
    return [str(script)] if script.exists() else [sys.executable, "-m", "autodev_shell.cli"]


def wall(argv: list[str]) -> Callable[[], float]:
    """Wall seconds of one run of `argv`, its output read and dropped."""

    def run() -> float:
        began = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        return time.perf_counter() - began

    return run


def parse_cost(text: str) -> Callable[[], float]:
    """CPU seconds of reading the scenario file's text (`parse_scenario`)."""

    def run() -> float:
        began = cpu_time()
        parse_scenario(text)
        return cpu_time() - began

    return run


def command(rounds: int, days: int = DAYS) -> dict[str, Any]:
    """`autodev simulate` of the storm's file against `python -c pass`, wall time."""
    scenario = used_answers(storm_scenario(days))
    text = render_scenario(scenario)
    with tempfile.TemporaryDirectory(prefix="autodev-bench-") as here:
        path = Path(here) / f"storm-{days}d.yaml"
        path.write_text(text, encoding="utf-8")
        simulate_s, python_s, parse_s = timed_rounds(
            [wall([*_autodev(), "simulate", str(path)]), wall([sys.executable, "-c", "pass"]),
             parse_cost(text)], rounds)
    return {
        "ratio": median_ratio(simulate_s, python_s),
        "simulate_ms": statistics.median(simulate_s) * 1e3,
        "python_ms": statistics.median(python_s) * 1e3,
        "parse_ms": statistics.median(parse_s) * 1e3,
        "file_bytes": len(text.encode("utf-8")),
        "answers": sum(len(answers) for _, answers in scenario.calls),
        "rounds": rounds,
        "days": days,
    }


def measure(rounds: int, days: int = DAYS) -> dict[str, Any]:
    scenario = storm_scenario(days)
    facts: dict[str, Any] = {}
    outcomes = step_outcomes(scenario)
    sim_s, rest_s, loop_s = timed_rounds(
        [simulation_rate(scenario, facts), without_step_rate(scenario, outcomes), loop_rate()],
        rounds,
    )
    return {
        "events_per_s": 1 / statistics.median(sim_s),
        "loop_per_s": 1 / statistics.median(loop_s),
        # events/s divided by loop iterations/s, per round, then the median.
        "relative": median_ratio(loop_s, sim_s),
        # simulate without step's cost, and step's share of the whole (per round, the median).
        "rest_us": statistics.median(rest_s) * 1e6,
        "step_share": 1 - median_ratio(rest_s, sim_s),
        "rounds": rounds,
        "days": days,
        **facts,
    }


def profile(days: int = DAYS, top: int = 20) -> str:
    scenario = storm_scenario(days)
    profiler = cProfile.Profile()
    profiler.enable()
    simulate(scenario)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--days", type=int, default=DAYS)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    c = command(args.rounds, args.days)
    print(f"autodev simulate, {c['days']} days ({c['file_bytes']:,} B file): "
          f"{c['simulate_ms']:.0f} ms wall = {c['ratio']:.1f}x python -c pass "
          f"({c['python_ms']:.0f} ms); parsing the file {c['parse_ms']:.0f} ms CPU")
    m = measure(args.rounds, args.days)
    print(f"{m['days']} simulated days: {m['events']} events, {m['calls']} calls, {m['limits']} "
          f"limits; {m['events_per_s']:,.0f} events/s (former target {TARGET_EVENTS_PER_S:,}); "
          f"trivial loop {m['loop_per_s']:,.0f} it/s; relative {m['relative']:.5f}; "
          f"step {m['step_share']:.0%} of the time, the rest {m['rest_us']:.1f} µs/event")
    if args.profile:
        print(profile(args.days))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
