"""Persistence confirmation: has the run state really been stored? (SPEC B4-B9)

Everything that decides whether a write is confirmed lives in this module (STYLE: h11's one
state-machine file): the state of B4, the tier roles of B5, the reducer of B6-B7, the
stale-pending planner of B8 with the identity-gated composition that applies it, and the turn
gate of B9. The shell writes (SQLite, checkpoint, shadow) and reports what happened as
`Queued` / `Accepted` events; it never flips `pending_persist` itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

import attrs

from .identity import RunIdentity, ids_equivalent, normalize_run_id
from .serialization import register_union

# --- B5: tier roles -----------------------------------------------------------------------

TierRole = Literal["canonical", "recovery-only", "replica-only", "unknown"]
#: A tier name meaning "no tier"; always unknown, never configurable (B5).
NO_TIER = "none"


def normalize_tier(tier: str | None) -> str:
    """Tier names are trimmed and lower-cased (B5); None and "" become "none"."""
    if tier is None:
        return NO_TIER
    if not isinstance(tier, str):
        raise TypeError(f"a tier name is a string, not {tier!r}")
    return tier.strip().lower() or NO_TIER


def _tier_set(values: Iterable[str]) -> frozenset[str]:
    if isinstance(values, str):
        raise TypeError("a tier role holds a collection of tier names, not one string")
    # "none" and "" are unknown whatever a table says (B5), so they are not kept in one.
    return frozenset(t for t in (normalize_tier(v) for v in values) if t != NO_TIER)


@attrs.frozen
class TierRoles:
    """Which storage tier plays which role (B5); the importing orchestrator may supply its own.

    Names are normalised (trimmed, lower-cased) when the table is built; a tier may hold only
    one role; "none" and "" are dropped, since they are unknown whatever the table says.
    """

    canonical: frozenset[str] = attrs.field(converter=_tier_set)
    recovery_only: frozenset[str] = attrs.field(converter=_tier_set)
    replica_only: frozenset[str] = attrs.field(converter=_tier_set)

    def __attrs_post_init__(self) -> None:
        overlap = (
            (self.canonical & self.recovery_only)
            | (self.canonical & self.replica_only)
            | (self.recovery_only & self.replica_only)
        )
        if overlap:
            raise ValueError(f"tiers with more than one role: {', '.join(sorted(overlap))}")


#: B5 / SPEC D defaults: SQLite confirms; shadow and checkpoint copies only recover; the
#: search index is a replica.
DEFAULT_TIERS = TierRoles(
    canonical=frozenset({"sqlite"}),
    recovery_only=frozenset({"shadow", "checkpoint"}),
    replica_only=frozenset({"search"}),
)


def tier_role(tier: str | None, tiers: TierRoles = DEFAULT_TIERS) -> TierRole:
    """The role of `tier` under `tiers` (B5): "canonical", "recovery-only", "replica-only"
    or "unknown" (anything else, including "none" and "")."""
    name = normalize_tier(tier)
    if name in tiers.canonical:
        return "canonical"
    if name in tiers.recovery_only:
        return "recovery-only"
    if name in tiers.replica_only:
        return "replica-only"
    return "unknown"


# --- B4: state, B6-B7: events ---------------------------------------------------------------


def _revision(value: int) -> int:
    # Revisions are whole numbers; a bool is refused even though Python calls it an int.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a revision is an int, not {value!r}")
    return value


def _tier_field(value: str | None) -> str:
    return normalize_tier(value)


@attrs.frozen
class PersistenceState:
    """B4. Defaults: nothing pending, revisions 0, tiers "none", no queued run."""

    pending_persist: bool = False
    writes_blocked: bool = False
    last_accepted_revision: int = attrs.field(default=0, converter=_revision)
    accepted_tier: str = attrs.field(default=NO_TIER, converter=_tier_field)
    last_recoverable_tier: str = attrs.field(default=NO_TIER, converter=_tier_field)
    queued_revision: int = attrs.field(default=0, converter=_revision)
    queued_run_id: str = attrs.field(default="", converter=normalize_run_id)
    queued_reason: str = ""
    queued_immediate: bool = False


@attrs.frozen
class Queued:
    """A write of `revision` for run `run_id` was queued, not yet confirmed (B6).

    `recoverable_tier` names the tier that holds a recovery copy meanwhile (e.g. "shadow"), if any.
    """

    revision: int = attrs.field(converter=_revision)
    run_id: str = attrs.field(converter=normalize_run_id)
    reason: str = ""
    immediate: bool = False
    recoverable_tier: str | None = None


@attrs.frozen
class Accepted:
    """Tier `tier` reports it stored `revision` (B7). Only a canonical tier confirms."""

    tier: str
    revision: int = attrs.field(converter=_revision)
    accepted: bool = True
    clear_queued: bool = True


PersistenceEvent = Queued | Accepted
register_union(PersistenceEvent)


def _positive(revision: int) -> int:
    # A revision ≤ 0 means "no revision" (B8's missing-target-revision).
    return revision if revision > 0 else 0


def reduce_persistence(
    state: PersistenceState,
    event: Queued | Accepted,
    *,
    tiers: TierRoles = DEFAULT_TIERS,
) -> PersistenceState:
    """The persistence reducer (B6, B7): a new state, never a mutated one."""
    if isinstance(event, Queued):
        return _queued(state, event, tiers)
    if isinstance(event, Accepted):
        return _accepted(state, event, tiers)
    raise TypeError(f"reduce_persistence takes Queued or Accepted, not {type(event).__name__}")


def _queued(state: PersistenceState, event: Queued, tiers: TierRoles) -> PersistenceState:
    recoverable = tier_role(event.recoverable_tier, tiers) == "recovery-only"
    return attrs.evolve(
        state,
        pending_persist=True,
        # B6: never decreases while queued (the queued fields reset only on a canonical accept).
        queued_revision=max(_positive(state.queued_revision), _positive(event.revision)),
        queued_run_id=event.run_id,
        queued_reason=event.reason,
        queued_immediate=event.immediate,
        # B6: a recovery copy in a recovery-only tier keeps writes open meanwhile.
        writes_blocked=not recoverable,
        last_recoverable_tier=(
            normalize_tier(event.recoverable_tier) if recoverable else state.last_recoverable_tier
        ),
    )


def _accepted(state: PersistenceState, event: Accepted, tiers: TierRoles) -> PersistenceState:
    if not event.accepted or tier_role(event.tier, tiers) != "canonical":
        return state  # B7: only a canonical acceptance advances confirmation.
    confirmed = attrs.evolve(
        state,
        pending_persist=False,
        writes_blocked=False,
        last_accepted_revision=max(state.last_accepted_revision, _positive(event.revision)),
        accepted_tier=normalize_tier(event.tier),
        last_recoverable_tier=NO_TIER,
    )
    return _clear_queued(confirmed) if event.clear_queued else confirmed


def _clear_queued(state: PersistenceState) -> PersistenceState:
    return attrs.evolve(
        state, queued_revision=0, queued_run_id="", queued_reason="", queued_immediate=False
    )


# --- B8: the stale-pending planner and its identity-gated composition -------------------------


@attrs.frozen
class CommitMarker:
    """The last commit marker the store wrote: which run, which revision, which tier.

    `accepted` is false for a marker written before the store confirmed (it then proves nothing).
    """

    run_id: str = attrs.field(converter=normalize_run_id)
    revision: int = attrs.field(converter=_revision)
    tier: str = attrs.field(default=NO_TIER, converter=_tier_field)
    accepted: bool = True


KeepReason = Literal[
    "not-pending",
    "missing-target-revision",
    "missing-run-id",
    "queued-run-mismatch",
    "accepted-revision-behind",
    "accepted-tier-not-canonical",
]
#: B8: the keep reasons, in the order they are checked.
KEEP_REASONS: tuple[str, ...] = (
    "not-pending",
    "missing-target-revision",
    "missing-run-id",
    "queued-run-mismatch",
    "accepted-revision-behind",
    "accepted-tier-not-canonical",
)
CLEAR_STALE_PENDING: Final = "clear-stale-pending"


@attrs.frozen
class StalePendingPlan:
    """What B8's planner decided: `action` "keep" (with the first failing `reason`) or
    "clear-stale-pending" (with the target, the accepted revision and the tier)."""

    action: Literal["keep", "clear-stale-pending"]
    reason: str
    target_revision: int = 0
    accepted_revision: int = 0
    tier: str = NO_TIER

    @property
    def clears(self) -> bool:
        return self.action == CLEAR_STALE_PENDING


def _as_identity(identity: RunIdentity | str) -> RunIdentity:
    # A bare string is an explicit active run id with no other known ids (B2 still holds).
    return identity if isinstance(identity, RunIdentity) else RunIdentity(run_id=identity)


def plan_stale_pending_clear(
    state: PersistenceState,
    identity: RunIdentity | str,
    *,
    batch_revision: int = 0,
    batch_tier: str | None = NO_TIER,
    marker: CommitMarker | None = None,
    tiers: TierRoles = DEFAULT_TIERS,
) -> StalePendingPlan:
    """B8: may a pending flag be cleared because a canonical tier already covers it?

    `batch_revision` / `batch_tier` describe the last write batch; `marker` the last commit
    marker. Unlike the source, the run comparison is B3 equivalence under the active identity,
    so a write queued under an alias of the active run clears too.
    """
    active = _as_identity(identity)
    target = max(_positive(batch_revision), _positive(state.queued_revision))

    def keep(reason: KeepReason, accepted: int = 0, tier: str = NO_TIER) -> StalePendingPlan:
        return StalePendingPlan("keep", reason, target, accepted, tier)

    if not state.pending_persist:
        return keep("not-pending")
    if target <= 0:
        return keep("missing-target-revision")
    if not active.run_id or not state.queued_run_id:
        return keep("missing-run-id")
    if not ids_equivalent(active.run_id, state.queued_run_id, active):
        return keep("queued-run-mismatch")
    marker_revision = 0
    if (
        marker is not None
        and marker.accepted
        and ids_equivalent(marker.run_id, state.queued_run_id, active)
    ):
        marker_revision = _positive(marker.revision)
    accepted = max(_positive(state.last_accepted_revision), marker_revision)
    if accepted < target:
        return keep("accepted-revision-behind", accepted)
    tier = _first_tier(state.accepted_tier, marker.tier if marker else None, batch_tier)
    if tier_role(tier, tiers) != "canonical":
        return keep("accepted-tier-not-canonical", accepted, tier)
    return StalePendingPlan(CLEAR_STALE_PENDING, CLEAR_STALE_PENDING, target, accepted, tier)


def _first_tier(*candidates: str | None) -> str:
    for candidate in candidates:
        tier = normalize_tier(candidate)
        if tier != NO_TIER:
            return tier
    return NO_TIER


def apply_stale_pending_plan(state: PersistenceState, plan: StalePendingPlan) -> PersistenceState:
    """Apply a plan of `plan_stale_pending_clear`: a "keep" plan leaves `state` unchanged.

    Clearing is the same transition as a canonical acceptance of the plan's revision (B7), so
    `last_accepted_revision` still never decreases.
    """
    if not plan.clears:
        return state
    return _clear_queued(
        attrs.evolve(
            state,
            pending_persist=False,
            writes_blocked=False,
            last_accepted_revision=max(state.last_accepted_revision, plan.accepted_revision),
            accepted_tier=plan.tier,
            last_recoverable_tier=NO_TIER,
        )
    )


@attrs.frozen
class StalePendingOutcome:
    """The identity-gated composition's result: the plan and the state after it."""

    plan: StalePendingPlan
    state: PersistenceState


def settle_stale_pending(
    state: PersistenceState,
    identity: RunIdentity | str,
    *,
    batch_revision: int = 0,
    batch_tier: str | None = NO_TIER,
    marker: CommitMarker | None = None,
    tiers: TierRoles = DEFAULT_TIERS,
) -> StalePendingOutcome:
    """B8 as one call: plan under the active identity's B3 gate, then apply.

    A write queued for another run is never cleared here: the planner keeps it with
    `queued-run-mismatch` and the state is returned as it was.
    """
    plan = plan_stale_pending_clear(
        state, identity, batch_revision=batch_revision, batch_tier=batch_tier,
        marker=marker, tiers=tiers,
    )
    return StalePendingOutcome(plan, apply_stale_pending_plan(state, plan))


# --- B9: the turn gate ------------------------------------------------------------------------


@attrs.frozen
class RecoveryCopy:
    """A recovery copy the shell holds (e.g. the shadow file): its run, revision and tier."""

    run_id: str = attrs.field(converter=normalize_run_id)
    revision: int = attrs.field(converter=_revision)
    tier: str = attrs.field(default="shadow", converter=_tier_field)


TurnGateReason = Literal[
    "confirmed",
    "stale-pending-cleared",
    "recovery-copy",
    "pending-persist",
    "queued-run-mismatch",
    "no-active-run",
]


@attrs.frozen
class TurnGate:
    """May the next turn start? (B9)

    `may_start` with `reason` "confirmed", "stale-pending-cleared" or "recovery-copy"; else
    deferred with "pending-persist" (the shell retries the write), "queued-run-mismatch" (the
    write belongs to another run; it is kept, never applied here) or "no-active-run".
    `detail` is the B8 planner's reason when it was consulted. `state` is the persistence state
    to carry on with: changed only when a stale pending flag was cleared.
    """

    may_start: bool
    reason: TurnGateReason
    state: PersistenceState
    detail: str = ""

    @property
    def retry_write(self) -> bool:
        """True when the shell should retry the queued write before asking again (B9)."""
        return self.reason == "pending-persist"


def turn_gate(
    state: PersistenceState,
    identity: RunIdentity | str,
    *,
    recovery: RecoveryCopy | None = None,
    marker: CommitMarker | None = None,
    batch_revision: int = 0,
    batch_tier: str | None = NO_TIER,
    tiers: TierRoles = DEFAULT_TIERS,
) -> TurnGate:
    """B9: a new turn starts only when the last turn's writes are confirmed by a canonical
    tier, or a stale pending flag clears (B8), or a recovery copy of the active run at least
    as new as the queued revision exists. A recovery copy lets the turn start but confirms
    nothing (B7): `pending_persist` stays set and the shell keeps retrying the write.
    """
    active = _as_identity(identity)
    if not state.pending_persist:
        return TurnGate(True, "confirmed", state)
    if not active.run_id:
        return TurnGate(False, "no-active-run", state)
    if state.queued_run_id and not ids_equivalent(active.run_id, state.queued_run_id, active):
        # Whatever else holds (no revision, a marker, a recovery copy), this write is another
        # run's: it is kept for that run and never applied to the active one.
        return TurnGate(False, "queued-run-mismatch", state, "queued-run-mismatch")
    outcome = settle_stale_pending(
        state, active, batch_revision=batch_revision, batch_tier=batch_tier,
        marker=marker, tiers=tiers,
    )
    plan = outcome.plan
    if plan.clears:
        return TurnGate(True, "stale-pending-cleared", outcome.state, plan.reason)
    target = max(_positive(batch_revision), _positive(state.queued_revision))
    if (
        recovery is not None
        and target > 0
        and recovery.revision >= target
        and tier_role(recovery.tier, tiers) == "recovery-only"
        and ids_equivalent(recovery.run_id, active.run_id, active)
        and ids_equivalent(recovery.run_id, state.queued_run_id, active)
    ):
        return TurnGate(True, "recovery-copy", state, plan.reason)
    return TurnGate(False, "pending-persist", state, plan.reason)


def describe_persistence(state: PersistenceState) -> str:
    """One line for `autodev status` (C6): what is confirmed, what is waiting."""
    if state.last_accepted_revision > 0:
        confirmed = f"revision {state.last_accepted_revision} confirmed by {state.accepted_tier}"
    else:
        confirmed = "nothing confirmed yet"
    if not state.pending_persist:
        return confirmed
    queued = f"revision {state.queued_revision}" if state.queued_revision > 0 else "a write"
    run = f" for run {state.queued_run_id!r}" if state.queued_run_id else ""
    why = f" ({state.queued_reason})" if state.queued_reason else ""
    if state.writes_blocked:
        copy = "writes blocked"
    elif state.last_recoverable_tier != NO_TIER:
        copy = f"recovery copy in {state.last_recoverable_tier}"
    else:
        copy = "writes open"
    return f"{queued}{run}{why} waiting for confirmation; {copy}; {confirmed}"
