"""docs/limits.md: one scenario run with `Policy.headroom` off and on, side by side (`autodev
simulate --compare-headroom AT`, docs/limits.md "Knob off and on").

What changes is counted as the run goes (`driver.Tally`): calls refused by a limit, turns a
limit cut short after they had run (their work wasted) and the call time they lost, and the time
the run spent waiting for a limit. A scenario whose limits are scripted per call cannot show a
difference (a call is refused whatever the engine's usage was); one that scripts its accounts'
usage over time (`usage:` periods, docs/scenarios.md) can.
"""

from __future__ import annotations

from datetime import timedelta

import attrs

from ..scheduler.policy import Headroom
from .driver import MAX_EVENTS, Tally, _guarded
from .scenario import Scenario


@attrs.frozen
class RunCost:
    """What one run's limits cost (see `driver.Tally`)."""

    posts: int
    calls: int
    refused: int
    cut_short: int
    lost: timedelta
    waiting: timedelta


@attrs.frozen
class HeadroomComparison:
    """The same scenario with the knob off and with `hand_over_at` set."""

    hand_over_at: float
    off: RunCost
    on: RunCost

    def table(self, title: str = "scenario") -> tuple[str, ...]:
        """A Markdown table of both runs (what the CLI prints, docs/limits.md quotes)."""
        rows = (
            ("posts", "posts"),
            ("calls", "calls"),
            ("calls refused by a limit", "refused"),
            ("turns wasted (a limit cut a running call short)", "cut_short"),
            ("call time lost to limits", "lost"),
            ("time waiting for a limit (every participant limited)", "waiting"),
        )
        out = [
            f"| {title} | headroom off | headroom on (hand_over_at {self.hand_over_at:g}) |",
            "| --- | ---: | ---: |",
        ]
        for label, name in rows:
            a, b = getattr(self.off, name), getattr(self.on, name)
            out.append(f"| {label} | {_show(a)} | {_show(b)} |")
        return tuple(out)


def _show(value: int | timedelta) -> str:
    if isinstance(value, timedelta):
        return f"{value / timedelta(hours=1):.1f} h"
    return f"{value:,}"


def _cost(scenario: Scenario, source: str, max_events: int) -> RunCost:
    tally = Tally()
    _guarded(scenario, source, max_events, tally)
    return RunCost(posts=tally.posts, calls=tally.calls, refused=tally.refused,
                   cut_short=tally.cut_short, lost=tally.lost, waiting=tally.waiting)


def compare_headroom(
    scenario: Scenario, hand_over_at: float, *, source: str = "<string>",
    max_events: int = MAX_EVENTS,
) -> HeadroomComparison:
    """Run `scenario` with `policy.headroom` off, then on at `hand_over_at` (every other
    number of its policy as written); a bad threshold is a ValueError naming it."""
    knob = Headroom(hand_over_at=hand_over_at)
    off = attrs.evolve(scenario, policy=attrs.evolve(scenario.policy, headroom=None))
    on = attrs.evolve(scenario, policy=attrs.evolve(scenario.policy, headroom=knob))
    return HeadroomComparison(
        hand_over_at=knob.hand_over_at,
        off=_cost(off, source, max_events),
        on=_cost(on, source, max_events),
    )


__all__ = ["HeadroomComparison", "RunCost", "compare_headroom"]
