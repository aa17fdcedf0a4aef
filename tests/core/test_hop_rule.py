"""Which entry a turn runs on, with `Policy.headroom` on (docs/scheduler.md, "Which entry a turn
runs on"; A11, A15, A23, A24, A26, A36): the earliest free entry, skipping entries near their
limit while a free one that is not near remains — after a refused call, after an outage and on a
handed-over turn alike, in the same order as a turn start. With the knob off nothing changes.

The two departures this pins (found by a check written from the docs): ana, moved off claude at
97 %, was refused by codex and walked back onto claude (`ana: codex limited → claude`) instead of
on to agy; and a colleague took a handed-over turn on its near engine while its chain had a free
one that was not near.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from helpers.headroom import headroom_team
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import (
    CallEnded,
    Engine,
    Log,
    SchedulerConfig,
    StartCall,
    initial_state,
    step,
)
from autodev_core.detection import LimitNotice
from autodev_core.scheduler import Call, EngineLimit, EngineUsage, Outage, SchedulerState

NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
H = timedelta(hours=1)


def _config(chains: dict[str, tuple[str, list[str]]], headroom: bool = True) -> SchedulerConfig:
    return headroom_team(chains, headroom=headroom)


def _in_call(config: SchedulerConfig, runner: str, engine: str, *, near: set[str],
             out: set[str] = frozenset(), limited: set[str] = frozenset(),
             owner: str | None = None) -> SchedulerState:
    """A run whose `runner` is in a call on `engine` for `owner`'s turn; `near` engines read at
    97 % of a window that resets in an hour, `out` providers unreachable, `limited` limited."""
    state = initial_state(config)
    owner = owner or runner
    return attrs.evolve(
        state,
        due=config.index[owner],
        status="running",
        call=Call(participant=runner, engine=Engine.parse(engine),
                  started_at=NOW - timedelta(minutes=1), turn_owner=owner),
        last_event_at=NOW - timedelta(minutes=1),
        readings=tuple(EngineUsage(Engine.parse(name), 0.97, "five_hour", NOW + H, seen=NOW)
                       for name in sorted(near)),
        outages=tuple(Outage(provider, NOW + H) for provider in sorted(out)),
        limits=tuple(EngineLimit(Engine.parse(name), NOW + H) for name in sorted(limited)),
    )


def _refused(state: SchedulerState, runner: str, engine: str,
             kind: str = "limit") -> tuple[tuple[str, str] | None, list[str]]:
    """The call ends refused (a limit with a reset in an hour, or an outage), nothing posted:
    who runs next on which engine, and the lines."""
    limit = LimitNotice(provider=engine.split(":")[0], reset_at=NOW + H, text="limited")
    event = CallEnded(now=NOW, participant=runner, engine=Engine.parse(engine), kind=kind,
                      posted=False, limit=limit if kind == "limit" else None)
    _after, effects = step(state, event)
    starts = [(e.participant, str(e.engine)) for e in effects if isinstance(e, StartCall)]
    assert len(starts) <= 1
    return (starts[0] if starts else None), [e.message for e in effects if isinstance(e, Log)]


def test_A11_after_a_refused_call_the_hop_goes_past_an_entry_near_its_limit() -> None:
    """ana (claude → codex → agy) is on codex because claude is at 97 %; codex refuses her: the
    hop goes on to agy, not back onto claude."""
    config = _config({"ana": ("claude", ["codex", "agy"]), "rui": ("codex", [])})
    start, lines = _refused(_in_call(config, "ana", "codex", near={"claude"}), "ana", "codex")
    assert start == ("ana", "agy")
    assert "ana: codex limited → agy" in lines


def test_A11_with_every_other_entry_near_the_hop_takes_the_near_one() -> None:
    """A reading never makes a turn wait: with agy out too, claude (near) is where it goes."""
    config = _config({"ana": ("claude", ["codex", "agy"]), "rui": ("codex", [])})
    state = _in_call(config, "ana", "codex", near={"claude"}, out={"agy"})
    start, lines = _refused(state, "ana", "codex")
    assert start == ("ana", "claude")
    assert "ana: codex limited → claude" in lines


def test_A15_a_colleague_takes_a_handed_over_turn_on_an_entry_not_near() -> None:
    """ana (claude, no chain) is refused; rui (codex → agy) takes the turn, on agy while codex
    is near its limit."""
    config = _config({"ana": ("claude", []), "rui": ("codex", ["agy"])})
    start, lines = _refused(_in_call(config, "ana", "claude", near={"codex"}), "ana", "claude")
    assert start == ("rui", "agy")
    assert "ana is rate limited — @rui takes the turn" in lines


def test_A26_after_an_outage_the_hop_goes_past_an_entry_near_its_limit() -> None:
    config = _config({"ana": ("claude", ["codex", "agy"]), "rui": ("agy", [])})
    state = _in_call(config, "ana", "codex", near={"claude"})
    start, lines = _refused(state, "ana", "codex", kind="network")
    assert start == ("ana", "agy")
    assert "ana: codex unreachable → agy" in lines


def test_knob_off_the_hop_takes_the_earliest_free_entry_as_before() -> None:
    config = _config({"ana": ("claude", ["codex", "agy"]), "rui": ("codex", [])}, headroom=False)
    start, lines = _refused(_in_call(config, "ana", "codex", near={"claude"}), "ana", "codex")
    assert start == ("ana", "claude")
    assert "ana: codex limited → claude" in lines


# -- the rule, for any chain and any near/out/limited engines ------------------------------------

ENGINES = ("claude", "codex", "agy", "claude:opus")


@given(
    chain=st.lists(st.sampled_from(ENGINES[1:]), min_size=2, max_size=3, unique=True),
    near=st.sets(st.sampled_from(ENGINES)),
    out=st.sets(st.sampled_from(("codex", "agy"))),
    limited=st.sets(st.sampled_from(ENGINES), max_size=2),
    kind=st.sampled_from(("limit", "network")),
    first_near=st.booleans(),
)
def test_a_hop_lands_on_a_near_entry_only_when_no_free_entry_is_cool(
    chain: list[str], near: set[str], out: set[str], limited: set[str], kind: str,
    first_near: bool,
) -> None:
    """ana (claude → chain) is refused on claude: if she hops, it is to her first free entry
    not near its limit, when one exists; else to her first free entry (A11, A26). (`first_near`
    puts the chain's first entry near its limit half the time: the case the rule is about.)"""
    if first_near:
        near = near | {chain[0]}
    config = _config({"ana": ("claude", chain), "rui": ("agy", [])})
    state = _in_call(config, "ana", "claude", near=near, out=out, limited=limited - {"claude"})
    start, _lines = _refused(state, "ana", "claude", kind=kind)
    lane = [str(e) for e in config.lanes[0]]
    gone = {"claude"} if kind == "limit" else {e for e in lane if e.startswith("claude")}

    def free(engine: str) -> bool:
        return (engine not in limited and engine not in gone
                and engine.split(":")[0] not in out)

    frees = [e for e in lane if free(e)]
    if not frees:
        assert start is None or start[0] != "ana"
        return
    # Issue 37: the readings are of the five-hour window, which is the account's: one near
    # engine puts every engine of its account (provider) near.
    accounts = {e.split(":")[0] for e in near}
    cool = [e for e in frees if e.split(":")[0] not in accounts]
    assert start == ("ana", (cool or frees)[0])
