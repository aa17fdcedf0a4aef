"""Hypothesis strategies for the scheduler (SPEC 0.4): teams, chains, installed CLIs, zones,
instants, durations, notices' resets and usage readings. `SchedulerMachine` draws from them;
an orchestrator testing its own teams may too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from ..detection.classification import UsageReading
from ..engine import PROVIDERS, Engine
from ..participant import Participant
from ..scheduler.policy import Policy
from ..scheduler.state import SchedulerConfig

ZONES: tuple[str, ...] = ("UTC", "Europe/Lisbon", "America/New_York", "Asia/Tokyo")
MODELS: tuple[str, ...] = ("opus", "sonnet", "haiku", "gpt-5", "flash")
#: Failures are drawn often enough that the 12-failure and 3-empty-turn pauses get reached.
OUTCOME_WEIGHTS: tuple[str, ...] = (
    "post", "post", "post", "limit", "limit", "limit", "limit", "limit", "network", "network",
    "exit", "exit", "timeout", "empty", "empty", "login",
)


# ------------------------------------------------------------------------------------------------
# Strategies


def engines(providers: tuple[str, ...] = PROVIDERS) -> st.SearchStrategy[Engine]:
    """`provider` or `provider:model` (A9)."""
    return st.builds(
        Engine,
        provider=st.sampled_from(providers),
        model=st.none() | st.sampled_from(MODELS),
    )


@st.composite
def participants(draw: st.DrawFn, *, id: str, installed: frozenset[str]) -> Participant:
    """A participant with at least one installed entry (A10, A12)."""
    provider = draw(st.sampled_from(PROVIDERS))
    chain = draw(st.lists(engines(), max_size=3, unique=True))
    chain = [e for e in chain if e != Engine(provider)]
    entries = [Engine(provider), *chain]
    if not any(e.provider in installed for e in entries):
        chain.append(Engine(draw(st.sampled_from(sorted(installed)))))
    return Participant(
        id=id,
        provider=provider,
        model=draw(st.none() | st.sampled_from(MODELS)),
        failover=tuple(chain),
        gate=draw(st.sampled_from((False, False, False, True))),
    )


@st.composite
def scheduler_configs(
    draw: st.DrawFn, *, max_team: int = 6, limited_iterations: bool = True
) -> SchedulerConfig:
    """Random teams, chains, installed CLIs, zones and (sometimes) an iteration limit."""
    installed = frozenset(draw(st.sets(st.sampled_from(PROVIDERS), min_size=1)))
    size = draw(st.integers(min_value=1, max_value=max_team))
    team = tuple(draw(participants(id=f"p{i}", installed=installed)) for i in range(size))
    max_iterations = None
    if limited_iterations:
        # Mostly unlimited (A43), sometimes a small budget to reach the stop.
        max_iterations = draw(
            st.one_of(st.none(), st.none(), st.none(), st.integers(min_value=0, max_value=60))
        )
    # docs/limits.md: `Policy.headroom` off (the SPEC) half the time, else a threshold.
    hand_over_at = draw(st.sampled_from((None, None, None, 0.5, 0.9, 0.95, 1.0)))
    return SchedulerConfig(
        team=team,
        installed=installed,
        timezone=draw(st.sampled_from(ZONES)),
        max_iterations=max_iterations,
        policy=Policy(headroom=hand_over_at),
    )


def instants() -> st.SearchStrategy[datetime]:
    return st.datetimes(
        min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31)
    ).map(lambda naive: naive.replace(microsecond=0, tzinfo=UTC))


def durations(max_hours: int = 6) -> st.SearchStrategy[timedelta]:
    """Mostly short call durations and clock jumps, sometimes hours."""
    return st.one_of(
        st.integers(min_value=0, max_value=600).map(lambda s: timedelta(seconds=s)),
        st.integers(min_value=0, max_value=max_hours * 60).map(lambda m: timedelta(minutes=m)),
    )


#: docs/limits.md: the utilizations a reading reports, around the thresholds
#: `scheduler_configs` draws.
UTILIZATIONS: tuple[float, ...] = (0.2, 0.49, 0.5, 0.9, 0.94, 0.95, 0.97, 1.0)
#: ... and the windows it names (claude's `rateLimitType`; empty when not said): the account's
#: (`five_hour`, `seven_day`), a model's (`seven_day_opus`), an unknown one (issue 37).
WINDOWS: tuple[str, ...] = ("five_hour", "seven_day", "seven_day_opus", "")


@st.composite
def usage_readings(draw: st.DrawFn, *, provider: str, now: datetime) -> UsageReading:
    """docs/limits.md: a healthy call's usage reading: its window resets from two hours ago (a stale
    reading) to two days ahead, or is not said."""
    offset = draw(st.none() | st.integers(min_value=-120, max_value=48 * 60))
    return UsageReading(
        provider=provider,
        utilization=draw(st.sampled_from(UTILIZATIONS)),
        window=draw(st.sampled_from(WINDOWS)),
        resets_at=None if offset is None else now + timedelta(minutes=offset),
        threshold=draw(st.sampled_from((None, 0.75, 0.9))),
    )


def reset_offsets() -> st.SearchStrategy[timedelta | None]:
    """A notice's reset relative to the call's end: none readable, past, or up to two days."""
    return st.none() | st.integers(min_value=-120, max_value=48 * 60).map(
        lambda m: timedelta(minutes=m)
    )


__all__ = [
    "MODELS",
    "OUTCOME_WEIGHTS",
    "UTILIZATIONS",
    "WINDOWS",
    "ZONES",
    "durations",
    "engines",
    "instants",
    "participants",
    "reset_offsets",
    "scheduler_configs",
    "usage_readings",
]
