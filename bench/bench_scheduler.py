"""Measure the turn scheduler: raw `step` throughput and a simulated week under a limit storm.

Run: `.venv/bin/python bench/bench_scheduler.py` (add `--profile` for a cProfile of the week).
Targets (see the brief): a simulated week of a 6-participant team under a limit storm well under
1 s; at least 50,000 events/s through the simulation engine.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import time
from datetime import UTC, datetime, timedelta

from common import storm_calls

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallEnded,
    RunStarted,
    SchedulerConfig,
    Woke,
    initial_state,
    step,
)
from autodev_core.simulation import SimulationResult, simulate
from autodev_core.simulation.scenario import CallAnswer, Scenario

TEAM = (
    Participant(id="ana", provider="claude", model="opus", failover=(Engine("codex"),
                                                                     Engine("claude", "sonnet"))),
    Participant(id="rui", provider="codex", failover=(Engine("agy"),)),
    Participant(id="eva", provider="agy", failover=(Engine("claude", "haiku"),)),
    Participant(id="leo", provider="claude", failover=(Engine("agy"),)),
    Participant(id="mia", provider="codex"),
    Participant(id="noa", provider="claude", model="sonnet", failover=(Engine("codex"),)),
)
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def bench_step(events: int, seed: int = 7) -> tuple[int, float]:
    """Feed `events` events straight to `step`: 1 in 4 calls hits a limit, some fail."""
    rng = random.Random(seed)
    state = initial_state(SchedulerConfig(team=TEAM, timezone="Europe/Lisbon"))
    now = START
    fed = 0
    began = time.perf_counter()
    state, _ = step(state, RunStarted(now=now))
    fed += 1
    while fed < events:
        if state.call is not None:
            now += timedelta(seconds=rng.randint(30, 900))
            roll = rng.random()
            engine = state.call.engine
            if roll < 0.25:
                reset = now + timedelta(minutes=rng.randint(5, 300))
                event = CallEnded(now=now, participant=state.call.participant, engine=engine,
                                  kind="limit", limit=LimitNotice(engine.provider, reset, "x"))
            elif roll < 0.30:
                event = CallEnded(now=now, participant=state.call.participant, engine=engine,
                                  kind="network")
            elif roll < 0.35:
                event = CallEnded(now=now, participant=state.call.participant, engine=engine,
                                  kind="exit", exit_code=1)
            else:
                event = CallEnded(now=now, participant=state.call.participant, engine=engine,
                                  kind="post", posted=True)
            state, _ = step(state, event)
        elif state.wait_until is not None:
            now = max(now, state.wait_until)
            state, _ = step(state, Woke(now=now))
        else:
            break
        fed += 1
    return fed, time.perf_counter() - began


def storm_scenario(days: int = 7, seed: int = 11) -> Scenario:
    """A week of six participants where about one call in four reports a limit."""
    return Scenario(
        start=START, timezone="Europe/Lisbon", team=TEAM,
        calls=storm_calls(TEAM, random.Random(seed), 4000),
        until=START + timedelta(days=days),
    )


def best_of_three(scenario: Scenario) -> tuple[SimulationResult, float]:
    """The simulation of `scenario`, and the fastest of three runs' wall times (seconds)."""
    best = None
    for _ in range(3):
        began = time.perf_counter()
        result = simulate(scenario)
        took = time.perf_counter() - began
        best = took if best is None else min(best, took)
    assert best is not None
    return result, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    fed, took = bench_step(args.events)
    print(f"step: {fed} events in {took:.3f} s = {fed / took:,.0f} events/s")

    scenario = storm_scenario()
    result, best = best_of_three(scenario)
    limits = sum(1 for line in result.lines if " limited until " in line.message)
    print(
        f"simulated week, 6 participants, limit storm: {result.events} events, {result.calls} "
        f"calls, {limits} limits, {len(result.lines)} lines in {best:.3f} s "
        f"= {result.events / best:,.0f} events/s (final status {result.status})"
    )
    busy = Scenario(
        start=START, timezone="Europe/Lisbon", team=TEAM, until=START + timedelta(days=7),
        default=CallAnswer(post="ok", duration=timedelta(seconds=60)),
    )
    result, best = best_of_three(busy)
    print(
        f"simulated busy week (one-minute posts, no limits): {result.events} events in "
        f"{best:.3f} s = {result.events / best:,.0f} events/s"
    )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        simulate(scenario)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
