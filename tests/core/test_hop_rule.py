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


def test_A15_a_refused_call_whose_chain_is_all_near_goes_to_a_colleague_not_near() -> None:
    """Issue 37, bench row 9: rui (codex → agy) is refused on codex and agy is near its limit;
    ana has claude free and not near: she takes the turn (the order of a turn start), rather
    than rui running on agy until its limit refuses him too."""
    config = _config({"ana": ("claude", []), "rui": ("codex", ["agy"])})
    start, lines = _refused(_in_call(config, "rui", "codex", near={"agy"}), "rui", "codex")
    assert start == ("ana", "claude")
    assert lines[-1] == "rui: agy near its limit — @ana takes the turn"


def test_A16_with_a_gate_the_refused_call_hops_onto_the_near_entry() -> None:
    """A16: a participant with a pending gate never hands its turn over, near or not."""
    config = _config({"ana": ("claude", []), "rui": ("codex", ["agy"])})
    state = _in_call(config, "rui", "codex", near={"agy"})
    state = attrs.evolve(state, gates=("rui",))
    start, lines = _refused(state, "rui", "codex")
    assert start == ("rui", "agy")
    assert "rui: codex limited → agy" in lines


def test_every_free_entry_near_the_turn_runs_on_the_one_read_lowest() -> None:
    """Nothing free is cool anywhere: ana (claude → codex → agy), refused on claude, hops onto
    agy read at 96 %, not codex at 99 % (the earliest in her chain); a tie keeps chain order."""
    config = _config({"ana": ("claude", ["codex", "agy"]), "rui": ("codex", [])})
    state = _in_call(config, "ana", "claude", near=set())
    state = attrs.evolve(state, readings=(
        EngineUsage(Engine("codex"), 0.99, "five_hour", NOW + H, seen=NOW),
        EngineUsage(Engine("agy"), 0.96, "five_hour", NOW + H, seen=NOW),
    ))
    start, lines = _refused(state, "ana", "claude")
    assert start == ("ana", "agy")
    assert "ana: claude limited → agy" in lines


def test_a_turn_start_on_entries_all_near_takes_the_one_read_lowest() -> None:
    """At a turn start with every free entry near, the owner moves to the one read lowest,
    with the near-limit hop line once (A24: not again while it stays there)."""
    config = _config({"ana": ("claude", ["codex"])})
    state = attrs.evolve(
        initial_state(config), status="running", last_event_at=NOW - H,
        readings=(EngineUsage(Engine("claude"), 0.99, "five_hour", NOW + H, seen=NOW - H),
                  EngineUsage(Engine("codex"), 0.96, "primary", NOW + H, seen=NOW - H)))
    state = attrs.evolve(state, call=Call(participant="ana", engine=Engine("claude"),
                                          started_at=NOW - H, turn_owner="ana"))
    after, effects = step(state, CallEnded(now=NOW, participant="ana", engine=Engine("claude"),
                                           kind="post", posted=True))
    starts = [(e.participant, str(e.engine)) for e in effects if isinstance(e, StartCall)]
    assert starts == [("ana", "codex")]
    assert [e.message for e in effects if isinstance(e, Log)][-1] == (
        "ana: claude near its limit → codex")
    _after, again = step(after, CallEnded(now=NOW + H / 2, participant="ana",
                                          engine=Engine("codex"), kind="post", posted=True))
    assert [(e.participant, str(e.engine)) for e in again if isinstance(e, StartCall)] == [
        ("ana", "codex")]
    assert not any("near its limit" in e.message for e in again if isinstance(e, Log))


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
    all_near=st.booleans(),
    rui=st.sampled_from(("agy", "codex")),
)
def test_a_hop_lands_on_a_near_entry_only_when_no_free_entry_is_cool(
    chain: list[str], near: set[str], out: set[str], limited: set[str], kind: str,
    first_near: bool, all_near: bool, rui: str,
) -> None:
    """ana (claude → chain) is refused on claude: she hops to her first free entry not near its
    limit, when one exists (A11, A26); else rui takes the turn on his engine when it is free and
    not near; else she hops to her first free entry (all are read alike here). (`first_near`
    puts the chain's first entry near its limit half the time: the case the rule is about.)"""
    if first_near:
        near = near | {chain[0]}
    if all_near:  # every entry of hers near: the case where a colleague may take the turn
        near = near | set(chain)
    config = _config({"ana": ("claude", chain), "rui": (rui, [])})
    state = _in_call(config, "ana", "claude", near=near, out=out, limited=limited - {"claude"})
    start, _lines = _refused(state, "ana", "claude", kind=kind)
    lane = [str(e) for e in config.lanes[0]]
    gone = {"claude"} if kind == "limit" else {e for e in lane if e.startswith("claude")}

    def free(engine: str) -> bool:
        return (engine not in limited and engine not in gone
                and engine.split(":")[0] not in out)

    frees = [e for e in lane if free(e)]
    # Issue 37: the readings are of the five-hour window, which is the account's: one near
    # engine puts every engine of its account (provider) near.
    accounts = {e.split(":")[0] for e in near}
    cool = [e for e in frees if e.split(":")[0] not in accounts]
    rui_cool = free(rui) and rui not in accounts
    if cool:
        assert start == ("ana", cool[0])  # A11: on along her chain, past near entries
    elif rui_cool:
        # No free entry of hers is cool, rui's is: he takes the turn on it (A15, the same
        # order as a turn start), not she on a near entry.
        assert start == ("rui", rui)
    elif frees:
        assert start == ("ana", frees[0])  # every free entry near, all read alike: the first
    else:
        assert start is None or start[0] != "ana"
