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

from ..errors import AutodevError
from ..serialization import register_union
from .identity import RunIdentity, ids_equivalent, normalize_run_id

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
    recovery_only: frozenset[str] = attrs.field(default=frozenset(), converter=_tier_set)
    replica_only: frozenset[str] = attrs.field(default=frozenset(), converter=_tier_set)

    def __attrs_post_init__(self) -> None:
        overlap = (
            (self.canonical & self.recovery_only)
            | (self.canonical & self.replica_only)
            | (self.recovery_only & self.replica_only)
        )
        if overlap:
            raise ValueError(f"tiers with more than one role: {', '.join(sorted(overlap))}")

    def bind(self) -> BoundTiers:
        """This table bound once (B4): methods that reduce, plan and gate under it, refusing
        unknown tier names."""
        return BoundTiers(self)


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
    """B4, in its order. Defaults: nothing pending, revisions 0, tiers "none", no queued or
    accepted run."""

    pending_persist: bool = False
    writes_blocked: bool = False
    last_accepted_revision: int = attrs.field(default=0, converter=_revision)
    accepted_tier: str = attrs.field(default=NO_TIER, converter=_tier_field)
    #: The run the last accepted revision belongs to (B7): the queued run when the acceptance
    #: came, else the acceptance's own `run_id`. Empty in a state stored before B7 said so.
    accepted_run_id: str = attrs.field(default="", converter=normalize_run_id)
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
    """Tier `tier` reports it stored `revision` (B7). Only a canonical tier confirms, and only
    what was queued up to `revision`, and only for the queued run. `run_id` (optional, an
    extension of SPEC D's signature) is the run the stored revision belongs to: empty, the
    queued run is meant; another run than the queued one confirms nothing of the queued write.
    `accepted_run_id` is set only by an acknowledgement that raises `last_accepted_revision`."""

    tier: str
    revision: int = attrs.field(converter=_revision)
    accepted: bool = True
    clear_queued: bool = True
    run_id: str = attrs.field(default="", converter=normalize_run_id)


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
    revision = _positive(event.revision)
    # An ack that names a run other than the queued one stored that run's write, not the
    # queued one (B8: an acceptance of another run never clears a pending write).
    foreign = bool(event.run_id and state.queued_run_id and event.run_id != state.queued_run_id)
    accepted = state
    if revision > state.last_accepted_revision:
        # B7: `accepted_run_id` and `accepted_tier` describe the acknowledgement that set
        # `last_accepted_revision`; a duplicate or late ack (one that does not raise it) leaves
        # both as they are, and no ack makes the accepted run an empty one.
        owner = event.run_id if foreign else state.queued_run_id or event.run_id
        accepted = attrs.evolve(
            state,
            last_accepted_revision=revision,
            accepted_tier=normalize_tier(event.tier),
            accepted_run_id=owner or state.accepted_run_id,
        )
    if foreign or revision < _positive(state.queued_revision):
        # B7: another run's write, or a late or out-of-order acknowledgement of an older write.
        # The queued write is not confirmed by it: the pending flag, the block, the queued
        # fields and the recovery copy that holds the newer write all stay.
        return accepted
    confirmed = attrs.evolve(
        accepted, pending_persist=False, writes_blocked=False, last_recoverable_tier=NO_TIER,
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

    `batch_revision` is the last write batch's revision (it raises the target); `marker` the
    last commit marker. The covering revision comes from the state (when `accepted_run_id` is
    the queued run) or the marker (when its run is the queued run and its tier canonical); the
    tier checked is the tier of whichever gave it. `batch_tier` is accepted for compatibility
    and no longer read: a batch's tier never confirms anything by itself (B8).
    Unlike the source, run comparisons are B3 equivalence under the active identity, so a
    write queued under an alias of the active run clears too.
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
    accepted, tier = _covering(state, active, marker, tiers)
    if accepted < target:
        return keep("accepted-revision-behind", accepted, tier)
    if tier_role(tier, tiers) != "canonical":
        return keep("accepted-tier-not-canonical", accepted, tier)
    return StalePendingPlan(CLEAR_STALE_PENDING, CLEAR_STALE_PENDING, target, accepted, tier)


def _covering(
    state: PersistenceState, active: RunIdentity, marker: CommitMarker | None, tiers: TierRoles
) -> tuple[int, str]:
    """B8: the revision that covers the queued write for its run, and the tier that gave it.

    Two records may: the state's last accepted revision, when `accepted_run_id` is the queued
    run; the commit marker's revision, when it is accepted, of the queued run, and from a
    canonical tier. The higher one gives the covering revision and its tier; on a tie the
    marker's (canonical by the condition above) is taken. (0, "none") when neither counts.
    """
    candidates: list[tuple[int, str]] = []
    if ids_equivalent(state.accepted_run_id, state.queued_run_id, active):
        candidates.append((_positive(state.last_accepted_revision), state.accepted_tier))
    if (
        marker is not None
        and marker.accepted
        and ids_equivalent(marker.run_id, state.queued_run_id, active)
        and tier_role(marker.tier, tiers) == "canonical"
    ):
        candidates.append((_positive(marker.revision), marker.tier))
    if not candidates:
        return 0, NO_TIER
    best = max(revision for revision, _tier in candidates)
    return best, [tier for revision, tier in candidates if revision == best][-1]


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
            accepted_run_id=state.queued_run_id,
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
    `code` is the B8 planner's reason when it was consulted (e.g. "accepted-revision-behind");
    `detail` says in words why, naming revisions, runs and tiers, so that a user can act on it.
    `state` is the persistence state to carry on with: changed only when a stale pending flag
    was cleared.
    """

    may_start: bool
    reason: TurnGateReason
    state: PersistenceState
    detail: str = ""
    code: str = ""

    @property
    def retry_write(self) -> bool:
        """True when the caller must go on retrying the queued canonical write (B9): the turn
        waits for it (`pending-persist`: retry, then ask again), or starts on a recovery copy
        while the write is still owed (`recovery-copy`: a recovery copy confirms nothing, B7;
        retry it as the turn runs, the next gate asks again). False when nothing is owed, or
        when the write is not this run's to retry (`queued-run-mismatch`, `no-active-run`)."""
        return self.reason in ("pending-persist", "recovery-copy")


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
        return TurnGate(True, "confirmed", state, _confirmed_words(state))
    if not active.run_id:
        return TurnGate(False, "no-active-run", state,
                        "a write is pending but no run is active; name the run (--run) it "
                        "belongs to")
    if state.queued_run_id and not ids_equivalent(active.run_id, state.queued_run_id, active):
        # Whatever else holds (no revision, a marker, a recovery copy), this write is another
        # run's: it is kept for that run and never applied to the active one.
        return TurnGate(False, "queued-run-mismatch", state,
                        _keep_words("queued-run-mismatch", state, active, 0, NO_TIER, tiers),
                        "queued-run-mismatch")
    outcome = settle_stale_pending(
        state, active, batch_revision=batch_revision, batch_tier=batch_tier,
        marker=marker, tiers=tiers,
    )
    plan = outcome.plan
    if plan.clears:
        words = (f"revision {plan.accepted_revision} of run {state.queued_run_id!r} was "
                 f"already confirmed by {plan.tier}; the stale pending flag was cleared")
        return TurnGate(True, "stale-pending-cleared", outcome.state, words, plan.reason)
    target = max(_positive(batch_revision), _positive(state.queued_revision))
    refused = _recovery_refusal(recovery, state, active, target, tiers)
    if recovery is not None and refused is None:
        words = (f"revision {target} is not confirmed yet, but a recovery copy in "
                 f"{normalize_tier(recovery.tier)} holds revision {recovery.revision}; the turn "
                 "starts and the write is retried")
        return TurnGate(True, "recovery-copy", state, words, plan.reason)
    words = _keep_words(plan.reason, state, active, plan.accepted_revision, plan.tier, tiers)
    if refused:
        words += f"; {refused}"
    return TurnGate(False, "pending-persist", state, words, plan.reason)


def _recovery_refusal(
    recovery: RecoveryCopy | None, state: PersistenceState, active: RunIdentity, target: int,
    tiers: TierRoles,
) -> str | None:
    """B9: None when `recovery` lets the turn start; else why not, in words ("" for no copy).

    It counts when its tier is recovery-only, its run is the active and the queued run, and
    its revision is at least the target.
    """
    if recovery is None:
        return ""
    tier = normalize_tier(recovery.tier)
    role = tier_role(tier, tiers)
    if role != "recovery-only":
        return (f"the copy in {tier!r} does not count: a recovery copy must be in a "
                f"recovery-only tier ({_names(tiers.recovery_only)}), and {tier!r} is {role}")
    if not (ids_equivalent(recovery.run_id, active.run_id, active)
            and ids_equivalent(recovery.run_id, state.queued_run_id, active)):
        return (f"the copy in {tier} belongs to run {recovery.run_id!r}, not the active run "
                f"{active.run_id!r}")
    if target <= 0 or recovery.revision < target:
        return (f"the copy in {tier} holds revision {recovery.revision}, older than the "
                f"pending revision {target}")
    return None


def _names(values: Iterable[str]) -> str:
    names = sorted(values)
    return ", ".join(names) if names else "none configured"


def _confirmed_words(state: PersistenceState) -> str:
    if state.last_accepted_revision > 0:
        return f"revision {state.last_accepted_revision} confirmed by {state.accepted_tier}"
    return "nothing is pending"


def _keep_words(
    reason: str, state: PersistenceState, active: RunIdentity, accepted: int, tier: str,
    tiers: TierRoles,
) -> str:
    """A B8 keep reason in words a user can act on: what is waiting, what would confirm it."""
    queued = state.queued_revision
    canonical = _names(tiers.canonical)
    if reason == "missing-target-revision":
        return ("the pending write names no revision (revision 0); queue it again with the "
                "revision it writes")
    if reason == "missing-run-id":
        return ("the pending write names no run; queue it again with the run id it belongs to")
    if reason == "queued-run-mismatch":
        return (f"the pending revision {queued} belongs to run {state.queued_run_id!r}, not the "
                f"active run {active.run_id!r}; it is kept for that run and never applied here")
    if reason == "accepted-tier-not-canonical":
        return (f"revision {accepted} covers the pending write but was confirmed by {tier!r}, "
                f"which is not a canonical tier ({canonical}); only a canonical tier confirms")
    why = (f"revision {queued} of run {state.queued_run_id!r} is waiting for a canonical tier "
           f"({canonical}) to confirm it; the newest revision confirmed for this run is "
           f"{accepted}")
    if state.last_accepted_revision > accepted and not ids_equivalent(
        state.accepted_run_id, state.queued_run_id, active
    ):
        why += (f" (revision {state.last_accepted_revision} was confirmed for run "
                f"{state.accepted_run_id!r}, which does not count)")
    return why + "; retry the write, and check that its acknowledgement names a canonical tier"


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


# --- B4: the tier table bound once --------------------------------------------------------------


class UnknownTierError(AutodevError, ValueError):
    """A tier name the bound table does not know (B4): a typo would otherwise be a silent no-op.

    `tier` is the name as given; `known` the table's tier names, which the message lists.
    """

    def __init__(self, tier: str | None, where: str, known: Iterable[str]) -> None:
        self.tier = tier
        self.known = tuple(sorted(known))
        super().__init__(
            f"unknown tier {tier!r} in {where}; the known tiers are "
            f"{', '.join(self.known) or 'none'}"
        )


@attrs.frozen
class BoundTiers:
    """An orchestrator's tier table, bound once (B4): `reduce`, `plan`, `settle` and `gate`
    are the module's functions with `tiers` filled in, so the table cannot be forgotten on one
    call. Unlike the bare reducer (where an unknown tier is a no-op, B5/B7), every tier name an
    event, marker or recovery copy carries must be in the table: an unknown one raises
    `UnknownTierError` naming the known tiers. Build it with `TierRoles.bind()` or
    `BoundTiers(tiers)`.
    """

    tiers: TierRoles = DEFAULT_TIERS

    @property
    def known(self) -> frozenset[str]:
        """Every tier name the table gives a role."""
        return self.tiers.canonical | self.tiers.recovery_only | self.tiers.replica_only

    def role(self, tier: str | None) -> TierRole:
        """The role of a known tier (B5); an unknown name raises."""
        return tier_role(self.check(tier, "a tier lookup"), self.tiers)

    def check(self, tier: str | None, where: str) -> str:
        """`tier` normalised, when the table knows it; else `UnknownTierError`."""
        name = normalize_tier(tier)
        if name not in self.known:
            raise UnknownTierError(tier, where, self.known)
        return name

    def reduce(self, state: PersistenceState, event: Queued | Accepted) -> PersistenceState:
        """`reduce_persistence` under this table (B6, B7). A `Queued` without a recovery copy
        (`recoverable_tier` None) is fine; any tier named must be known."""
        if isinstance(event, Accepted):
            self.check(event.tier, f"Accepted(revision={event.revision})")
        elif isinstance(event, Queued) and event.recoverable_tier is not None:
            self.check(event.recoverable_tier, f"Queued(revision={event.revision})")
        return reduce_persistence(state, event, tiers=self.tiers)

    def _facts(self, marker: CommitMarker | None, recovery: RecoveryCopy | None = None) -> None:
        if marker is not None:
            self.check(marker.tier, f"the commit marker of revision {marker.revision}")
        if recovery is not None:
            self.check(recovery.tier, f"the recovery copy of revision {recovery.revision}")

    def plan(
        self, state: PersistenceState, identity: RunIdentity | str, *, batch_revision: int = 0,
        marker: CommitMarker | None = None,
    ) -> StalePendingPlan:
        """`plan_stale_pending_clear` under this table (B8)."""
        self._facts(marker)
        return plan_stale_pending_clear(state, identity, batch_revision=batch_revision,
                                        marker=marker, tiers=self.tiers)

    def settle(
        self, state: PersistenceState, identity: RunIdentity | str, *, batch_revision: int = 0,
        marker: CommitMarker | None = None,
    ) -> StalePendingOutcome:
        """`settle_stale_pending` under this table (B8)."""
        self._facts(marker)
        return settle_stale_pending(state, identity, batch_revision=batch_revision,
                                    marker=marker, tiers=self.tiers)

    def gate(
        self, state: PersistenceState, identity: RunIdentity | str, *,
        recovery: RecoveryCopy | None = None, marker: CommitMarker | None = None,
        batch_revision: int = 0,
    ) -> TurnGate:
        """`turn_gate` under this table (B9)."""
        self._facts(marker, recovery)
        return turn_gate(state, identity, recovery=recovery, marker=marker,
                         batch_revision=batch_revision, tiers=self.tiers)
