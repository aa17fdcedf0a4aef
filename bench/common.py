"""What the benches share: the limit storm's call mix, and their command lines (`--rounds`).

The benches import each other by name (each is run as `python bench/bench_x.py`, so bench/ is
on the path); this module holds what two or more of them build the same way, so that each
states its own measure and none restates another's setup.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

from autodev_core.participant import Participant
from autodev_core.simulation.scenario import CallAnswer

#: The limit notices of the storm, one a provider; `{h}` is the hours until the reset.
NOTICES = {
    "claude": "You've hit your limit · resets {h}pm (Europe/Lisbon)",
    "codex": "You've hit your usage limit. Upgrade to Pro or try again in {h} hours 2 minutes.",
    "agy": "Individual quota reached. Resets in {h}h31m33s.",
}

#: Where a call's roll falls: below the first cut a limit notice, below the second a network
#: failure, below the third an exit 2, else a post. The storm: one call in four is limited.
STORM_CUTS = (0.25, 0.27, 0.29)
#: The same mix without the notices (the accounts' usage limits the calls instead).
NO_NOTICE_CUTS = (0.0, 0.02, 0.04)


def storm_answer(rng: random.Random, provider: str,
                 cuts: tuple[float, float, float] = STORM_CUTS) -> CallAnswer:
    """One call of the storm: lasts 1-15 minutes; what it answers is drawn by `cuts`."""
    duration = timedelta(seconds=rng.randint(60, 900))
    roll = rng.random()
    limit, network, failure = cuts
    if roll < limit:
        text = NOTICES[provider].format(h=rng.randint(1, 5))
        if provider == "claude":  # claude says it on stdout, the others on stderr
            return CallAnswer(stdout=text, exit=1, duration=duration)
        return CallAnswer(stderr=text, exit=1, duration=duration)
    if roll < network:
        return CallAnswer(stderr="getaddrinfo ENOTFOUND api.example.com", exit=1,
                          duration=duration)
    if roll < failure:
        return CallAnswer(exit=2, duration=duration)
    return CallAnswer(post="done", duration=duration)


def storm_calls(team: Iterable[Participant], rng: random.Random, per_key: int,
                cuts: tuple[float, float, float] = STORM_CUTS,
                ) -> tuple[tuple[str, tuple[CallAnswer, ...]], ...]:
    """`per_key` storm answers for each engine of `team`, the keys in sorted order."""
    calls = []
    for key in sorted({str(e) for p in team for e in p.entries}):
        provider = key.split(":")[0]
        calls.append((key, tuple(storm_answer(rng, provider, cuts) for _ in range(per_key))))
    return tuple(calls)


def rounds_parser(description: str | None, rounds: int) -> argparse.ArgumentParser:
    """The command line every bench takes: `--rounds`, how many interleaved rounds to measure."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser


def rounds_args(argv: list[str] | None, description: str | None,
                rounds: int) -> argparse.Namespace:
    return rounds_parser(description, rounds).parse_args(argv)


def disk_bench_args(argv: list[str] | None, description: str,
                    rounds: int) -> argparse.Namespace:
    """`--rounds` and `--dir` (the disk to measure), as the disk benches take them."""
    parser = rounds_parser(description, rounds)
    parser.add_argument("--dir", type=Path, default=None,
                        help="directory on the disk to measure (default: a temp dir)")
    return parser.parse_args(argv)
