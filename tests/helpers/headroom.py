"""A team with `Policy.headroom` on, for the rule tests of docs/scheduler.md "Acting before the
limit" and "Which entry a turn runs on": one participant file per (id, (provider, chain))."""

from __future__ import annotations

from autodev_core import Policy, SchedulerConfig, parse_participant

#: The threshold the rule tests read engines against (a reading of 0.97 is near).
THRESHOLD = 0.95


def headroom_team(chains: dict[str, tuple[str, list[str]]], *,
                  headroom: bool = True) -> SchedulerConfig:
    """`chains` as a team in that order, with `policy.headroom` at THRESHOLD (or off)."""
    team = [
        parse_participant(f"---\nprovider: {provider}\nfailover: [{', '.join(chain)}]\n---\nGo.",
                          id=pid)
        for pid, (provider, chain) in chains.items()
    ]
    return SchedulerConfig(team=team, timezone="UTC",
                           policy=Policy(headroom=THRESHOLD if headroom else None))
