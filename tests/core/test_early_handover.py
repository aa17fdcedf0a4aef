"""Where `Policy.headroom` hands a turn over before the limit (docs/scheduler.md "Acting before
the limit"): to the owner's earliest free entry that is not near its limit, else to the first
colleague with such an entry — and *free* means free of limits (A8) and of outages (A26) alike.
An engine whose provider cannot be reached is never where a turn goes early: A26 takes the
provider out for every participant on it, whatever its usage says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from helpers.headroom import headroom_team
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import (
    Engine,
    Log,
    RunStarted,
    SchedulerConfig,
    StartCall,
    initial_state,
    step,
)
from autodev_core.scheduler import EngineLimit, EngineUsage, Outage, SchedulerState

NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
H = timedelta(hours=1)

#: Turn order and lanes: ana claude → codex → agy; rui codex → claude:opus; eva agy.
CHAINS = {"ana": ("claude", ["codex", "agy"]), "rui": ("codex", ["claude:opus"]),
          "eva": ("agy", [])}
ENGINES = ("claude", "codex", "agy", "claude:opus")
PROVIDERS = ("claude", "codex", "agy")


def _config(chains: dict[str, tuple[str, list[str]]] = CHAINS) -> SchedulerConfig:
    return headroom_team(chains)


def _state(config: SchedulerConfig, *, near: set[str], out: set[str],
           limited: frozenset[str] | set[str] = frozenset(), due: int = 0) -> SchedulerState:
    """A run about to start its owed turn: `near` engines read at 97 % of a window that resets
    in an hour, `out` providers unreachable for an hour (A27), `limited` engines limited."""
    return attrs.evolve(
        initial_state(config),
        due=due,
        readings=tuple(EngineUsage(Engine.parse(name), 0.97, "five_hour", NOW + H, seen=NOW)
                       for name in sorted(near)),
        outages=tuple(Outage(provider, NOW + H) for provider in sorted(out)),
        limits=tuple(EngineLimit(Engine.parse(name), NOW + H) for name in sorted(limited)),
    )


def _start(state: SchedulerState) -> tuple[tuple[str, str] | None, list[str]]:
    """Who starts the turn, on which engine (None: the run waits), and the lines' kinds."""
    _after, effects = step(state, RunStarted(now=NOW))
    starts = [(e.participant, str(e.engine)) for e in effects if isinstance(e, StartCall)]
    assert len(starts) <= 1
    return (starts[0] if starts else None), [e.kind for e in effects if isinstance(e, Log)]


def test_A26_an_early_hop_skips_a_chain_entry_whose_provider_is_out() -> None:
    """claude near its limit, codex unreachable: ana's early hop goes past codex to agy."""
    start, kinds = _start(_state(_config(), near={"claude"}, out={"codex"}))
    assert start == ("ana", "agy")
    assert kinds == ["hop-near-limit"]


def test_A26_an_early_handover_skips_a_colleague_whose_provider_is_out() -> None:
    """ana has no chain; rui's only provider is out: the turn goes early to eva, not rui."""
    config = _config({"ana": ("claude", []), "rui": ("codex", []), "eva": ("agy", [])})
    start, kinds = _start(_state(config, near={"claude"}, out={"codex"}))
    assert start == ("eva", "agy")
    assert kinds == ["handover-near-limit"]


def test_A26_with_every_cool_entry_out_the_warned_engine_runs() -> None:
    """Nothing free is below the threshold (codex and agy are out, every colleague is on one
    of them): the turn runs on the warned engine, as without the knob; a warning never makes
    the run wait, and never sends a turn to a provider that cannot be reached."""
    config = _config({"ana": ("claude", ["codex", "agy"]), "rui": ("codex", []),
                      "eva": ("agy", [])})
    start, kinds = _start(_state(config, near={"claude"}, out={"codex", "agy"}))
    assert start == ("ana", "claude")
    assert kinds == []


def _usable(state: SchedulerState, engine: Engine) -> bool:
    """A8, A26, A38: no limit of the engine and no outage of its provider still ahead."""
    return (all(r.engine != engine or r.until <= NOW for r in state.limits)
            and all(o.provider != engine.provider or o.retry_at <= NOW for o in state.outages))


def _expected(state: SchedulerState, near: set[str]) -> tuple[str, str] | None:
    """The turn start of docs/scheduler.md "Acting before the limit", stated on its own for an
    owner that may hand over (no gate, no approved turn, a team of three)."""
    config = state.config
    n = len(config.team)
    owner = state.due
    order = [(owner + k) % n for k in range(n)]

    def first(runner: int, cool: bool) -> Engine | None:
        return next((e for e in config.lanes[runner]
                     if _usable(state, e) and not (cool and str(e) in near)), None)

    free = first(owner, False)
    if free is not None and str(free) not in near:
        return config.team[owner].id, str(free)  # 0: as without the knob
    for runner in order:  # 1: the owner's chain, 2: a colleague, on an entry not near
        cool = first(runner, True)
        if cool is not None:
            return config.team[runner].id, str(cool)
    for runner in order:  # 3: as without the knob (A23, A15), near or not
        usable = first(runner, False)
        if usable is not None:
            return config.team[runner].id, str(usable)
    return None  # A18: the run waits


@given(near=st.sets(st.sampled_from(ENGINES)), out=st.sets(st.sampled_from(PROVIDERS)),
       limited=st.sets(st.sampled_from(ENGINES)), due=st.integers(min_value=0, max_value=2))
def test_A26_a_turn_start_with_the_knob_on_never_goes_to_a_provider_that_is_out(
    near: set[str], out: set[str], limited: set[str], due: int
) -> None:
    """For any mix of warned engines, limits and outages, the turn start is the one the three
    steps pick over entries free of both limits and outages; in particular its engine's
    provider is never one that cannot be reached."""
    state = _state(_config(), near=near, out=out, limited=limited, due=due)
    start, _kinds = _start(state)
    # Issue 37: a five-hour reading is the account's: it puts every engine of its provider near.
    accounts = {name.split(":")[0] for name in near}
    assert start == _expected(state, {e for e in ENGINES if e.split(":")[0] in accounts})
    if start is not None:
        assert Engine.parse(start[1]).provider not in out
