"""Starting again from a saved scheduler state: after a crash, after a stop, with a changed team.

A state saved with `to_json` at any moment — mid-call, mid-wait, paused, stopped — comes back
through `restore_state` as a state that is not doing anything: no call in flight (whatever call
the saved state held was cut short by the crash or the stop, so it has no outcome) and no wait.
What the run owes survives; what only a live process knew does not.
"""

from __future__ import annotations

import attrs

from .state import SchedulerConfig, SchedulerState, initial_state


def _due_id(saved: SchedulerState, ids: frozenset[str]) -> str | None:
    """The participant the saved turn is owed to, or — when it left the team — the first one
    after it in the saved team order that is still in the team (A33)."""
    team = saved.config.team
    for offset in range(len(team)):
        member = team[(saved.due + offset) % len(team)].id
        if member in ids:
            return member
    return None


class NotASavedState(TypeError):
    """`restore_state` was handed something other than a `SchedulerState` (or None): a caller's
    mistake, said in one line (docs/orchestrators.md, Restarting)."""


def _check_arguments(config: object, saved: object) -> None:
    if isinstance(saved, (str, bytes)):
        raise NotASavedState(
            "restore_state takes the saved SchedulerState, not JSON text: call "
            "from_json(text, SchedulerState) first")
    if saved is not None and not isinstance(saved, SchedulerState):
        raise NotASavedState(
            f"restore_state takes the saved SchedulerState (or None), not "
            f"{type(saved).__name__}")
    if not isinstance(config, SchedulerConfig):
        raise NotASavedState(
            f"restore_state takes the team's SchedulerConfig first, not {type(config).__name__}")


def restore_state(config: SchedulerConfig, saved: SchedulerState | None) -> SchedulerState:
    """The state to start from, given the team as it is now and the state last saved (or None).

    Kept: who the turn is owed to (A33; by participant id, so a reordered or grown team keeps
    it, and a removed participant passes it to the next one in the old order), a gate-approved
    turn still owed (A22), the pending gates of participants still in the team (a new member
    starts with its file's gate, A16), the calls made and call time (A30, A21, A43), and the
    instant of the last event as a floor (`last_event_at`): time never goes backwards across a
    restart either (A20, A38), so an event earlier than it is refused as in a live run.

    Forgotten: the limit and outage registry and the usage readings (A25: limits are
    rediscovered by calling, readings reported again; docs/limits.md), a call
    that was in flight (its turn is still owed and is started again), a wait, the failure and
    empty-turn counts (a start or resume begins them afresh, A29, A31) and each participant's
    place on its chain (it takes its earliest free entry, A23). `fresh` is true: the first call
    after a restart is a `fresh` turn (B18) — `RunStarted` makes it so in a live run too, and the
    call the saved state held in flight has no outcome, so nothing says its CLI saw the input.

    The status is `paused` when the saved run was paused — a pause waits for a person (A29,
    A31, A32), so feed `ResumeRequested` to go on — with its reason (`paused_for`; None in a
    state saved before reasons were kept), and `stopped` otherwise: feed `RunStarted`.
    """
    _check_arguments(config, saved)
    fresh = initial_state(config)
    if saved is None:
        return fresh
    ids = frozenset(p.id for p in config.team)
    old_ids = frozenset(p.id for p in saved.config.team)
    due_id = _due_id(saved, ids)
    due = config.index[due_id] if due_id is not None else 0
    gates = frozenset(g for g in saved.gates if g in ids) | frozenset(
        p.id for p in config.team if p.gate and p.id not in old_ids
    )
    approved = saved.approved if saved.approved in ids else None
    return attrs.evolve(
        fresh,
        status="paused" if saved.status == "paused" else "stopped",
        paused_for=saved.paused_for if saved.status == "paused" else None,
        due=due,
        approved=approved,
        gates=gates,
        iterations=saved.iterations,
        runtime=saved.runtime,
        last_event_at=saved.last_event_at,  # A20: the saved instant is a floor
    )


__all__ = ["NotASavedState", "restore_state"]
