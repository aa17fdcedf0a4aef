"""Replicas and checkpoints: the primary is the truth, the rest follow it (SPEC B13-B17).

The canonical store (SQLite) is the primary and the only source of a reliable revision; the
checkpoint file is a backup replica; a search replica (the thread index) is optional (B13).
This module decides — audit, restore, checkpoint source, sync steps, the search-replica gate —
and the shell does the writing, one step at a time, reporting each outcome back.

Two departures from the source, both deliberate: a replica *ahead* of the primary and a
*missing* primary are reported as drift (the source said nothing), while a primary ahead of its
replicas is only "replicas pending sync" (B14).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Final, Literal

import attrs

from .identity import RunIdentity, ids_equivalent
from .persistence import DEFAULT_TIERS, TierRoles, tier_role

ReplicaRole = Literal["backup", "search"]
REPLICA_ROLES: tuple[str, ...] = ("backup", "search")

#: The primary's name in issues and messages.
PRIMARY: Final = "primary"


def _revision_or_none(value: int | None) -> int | None:
    # A revision ≤ 0 means "nothing stored" (B15 treats revision ≤ 0 as empty).
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a revision is an int or None, not {value!r}")
    return value if value > 0 else None


def _name(value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a replica needs a non-empty name, not {value!r}")
    return value.strip()


@attrs.frozen
class ReplicaState:
    """A replica's last known revision; None when it holds nothing (B13)."""

    name: str = attrs.field(converter=_name)
    role: ReplicaRole = attrs.field(validator=attrs.validators.in_(REPLICA_ROLES))
    revision: int | None = attrs.field(default=None, converter=_revision_or_none)


# --- B14: the audit -----------------------------------------------------------------------------

IssueKind = Literal["pending-sync", "replica-ahead", "primary-missing"]
#: Issue kinds that are drift (B14); "pending-sync" never is.
DRIFT_KINDS: frozenset[str] = frozenset({"replica-ahead", "primary-missing"})


@attrs.frozen
class ReplicaIssue:
    """One replica out of step with the primary."""

    replica: str
    kind: IssueKind
    primary_revision: int | None
    replica_revision: int | None

    @property
    def is_drift(self) -> bool:
        return self.kind in DRIFT_KINDS


AuditStatus = Literal["in-sync", "pending-sync", "drift", "empty"]


@attrs.frozen
class ReplicaAudit:
    """B14. `status`: "in-sync", "pending-sync" (the primary is ahead: not drift), "drift" (a
    replica ahead, or replicas without a primary) or "empty" (nothing stored anywhere)."""

    status: AuditStatus
    primary_revision: int | None
    issues: tuple[ReplicaIssue, ...] = ()

    @property
    def pending(self) -> tuple[str, ...]:
        """Replicas behind the primary, waiting for a sync."""
        return tuple(i.replica for i in self.issues if i.kind == "pending-sync")

    @property
    def drifted(self) -> tuple[str, ...]:
        return tuple(i.replica for i in self.issues if i.is_drift)

    @property
    def drift(self) -> bool:
        return self.status == "drift"


def audit_replicas(primary_revision: int | None, replicas: Iterable[ReplicaState]) -> ReplicaAudit:
    """Compare every replica with the primary (B14).

    Primary ahead (or replica empty) → "pending-sync"; a replica ahead → "replica-ahead"; a
    replica holding data while the primary holds none → "primary-missing". Either of the last
    two makes the audit "drift".
    """
    primary = _revision_or_none(primary_revision)
    replicas = tuple(replicas)
    names = [r.name for r in replicas]
    if len(set(names)) != len(names):
        raise ValueError(f"replica names must be unique, got {names}")
    issues: list[ReplicaIssue] = []
    for replica in replicas:
        kind: IssueKind | None = None
        if primary is None:
            kind = "primary-missing" if replica.revision is not None else None
        elif replica.revision is None or replica.revision < primary:
            kind = "pending-sync"
        elif replica.revision > primary:
            kind = "replica-ahead"
        if kind is not None:
            issues.append(ReplicaIssue(replica.name, kind, primary, replica.revision))
    status: AuditStatus
    if any(i.is_drift for i in issues):
        status = "drift"
    elif issues:
        status = "pending-sync"
    else:
        status = "in-sync" if primary is not None else "empty"
    return ReplicaAudit(status, primary, tuple(issues))


# --- B14: restoring from a checkpoint -----------------------------------------------------------

RestoreReason = Literal["primary-missing", "checkpoint-ahead", "up-to-date", "primary-ahead",
                        "no-checkpoint", "other-run"]


@attrs.frozen
class RestoreDecision:
    """Whether restoring the primary from a checkpoint is allowed (B14), and why."""

    allowed: bool
    reason: RestoreReason
    primary_revision: int | None
    checkpoint_revision: int | None


def plan_checkpoint_restore(
    primary_revision: int | None,
    checkpoint_revision: int | None,
    *,
    store_identity: RunIdentity | None = None,
    checkpoint_run_id: str | None = None,
) -> RestoreDecision:
    """Refuse a restore that would overwrite newer primary data with older data (B14), or
    replace a run's store with another run's checkpoint (B1, B3).

    `store_identity` is the run the readable primary belongs to (its run id, integrity id and
    aliases); `checkpoint_run_id` the run written in the checkpoint. When both are known and
    not equivalent under the store's identity (B3) the restore is refused ("other-run"),
    whatever the revisions say. Otherwise it is allowed only when the primary holds nothing or
    the checkpoint is strictly newer; an equal revision has nothing to restore ("up-to-date").
    """
    primary = _revision_or_none(primary_revision)
    checkpoint = _revision_or_none(checkpoint_revision)

    def decide(allowed: bool, reason: RestoreReason) -> RestoreDecision:
        return RestoreDecision(allowed, reason, primary, checkpoint)

    if checkpoint is None:
        return decide(False, "no-checkpoint")
    if (
        store_identity is not None
        and checkpoint_run_id is not None
        and not ids_equivalent(store_identity.run_id, checkpoint_run_id, store_identity)
    ):
        return decide(False, "other-run")
    if primary is None:
        return decide(True, "primary-missing")
    if primary > checkpoint:
        return decide(False, "primary-ahead")
    if primary == checkpoint:
        return decide(False, "up-to-date")
    return decide(True, "checkpoint-ahead")


# --- B15: the checkpoint source -----------------------------------------------------------------

#: B15: the failure when the primary's snapshot cannot serve as the checkpoint source.
PRIMARY_CHECKPOINT_SOURCE_EMPTY: Final = "primary-checkpoint-source-empty"
#: When the primary is not canonical and the in-memory state is empty too.
IN_MEMORY_CHECKPOINT_SOURCE_EMPTY: Final = "in-memory-checkpoint-source-empty"

CheckpointSource = Literal["primary-snapshot", "in-memory"]


@attrs.frozen
class PrimaryExport:
    """What exporting the primary's snapshot gave: its revision, or `ok=False` on failure."""

    revision: int
    ok: bool = True


@attrs.frozen
class CheckpointPlan:
    """B15: write a checkpoint of `revision` from `source`, or fail with `failure`."""

    ok: bool
    source: CheckpointSource | None
    revision: int = 0
    failure: str | None = None


def plan_checkpoint(
    primary_tier: str,
    export: PrimaryExport | None,
    *,
    in_memory_revision: int = 0,
    tiers: TierRoles = DEFAULT_TIERS,
) -> CheckpointPlan:
    """Choose the checkpoint's source (B15).

    When the primary is the canonical tier the source is its snapshot and nothing else: a
    failed, missing or empty export (revision ≤ 0) fails the checkpoint with
    `primary-checkpoint-source-empty` — the possibly stale in-memory state is never used.
    Only an orchestrator whose primary tier is not canonical checkpoints its in-memory state.
    """
    if tier_role(primary_tier, tiers) == "canonical":
        if export is None or not export.ok or export.revision <= 0:
            return CheckpointPlan(False, None, 0, PRIMARY_CHECKPOINT_SOURCE_EMPTY)
        return CheckpointPlan(True, "primary-snapshot", export.revision)
    if in_memory_revision <= 0:
        return CheckpointPlan(False, None, 0, IN_MEMORY_CHECKPOINT_SOURCE_EMPTY)
    return CheckpointPlan(True, "in-memory", in_memory_revision)


# --- B15: how the checkpoint grows (append a record, or compact) -------------------------------

CheckpointWriteKind = Literal["append", "compact"]


def _byte_count(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} is a byte count ≥ 0, not {value!r}")


@attrs.frozen
class CheckpointGrowth:
    """The checkpoint file as its writer knows it: `base_bytes` in its base (the whole
    snapshot when it was last compacted) and `appended_bytes` in the records after it."""

    base_bytes: int = attrs.field(validator=_byte_count)
    appended_bytes: int = attrs.field(validator=_byte_count)


def plan_checkpoint_write(file: CheckpointGrowth | None, record_bytes: int) -> CheckpointWriteKind:
    """Whether the next checkpoint is a record of `record_bytes` appended to the file
    ("append": what changed since the file's revision) or a compaction ("compact": the whole
    snapshot rewritten as the file's new base, atomically).

    `file` is None when the writer knows of no file a record could follow (none yet, one of an
    older version, one that a torn append ends, one replaced by another writer): compact. Else
    append while the records, this one included, hold no more bytes than the base, and compact
    once they would outgrow it. A compaction then writes at most about twice what was appended
    since the last one, so the bytes written per revision stay bounded by what the revisions
    add, whatever the thread holds (a whole-snapshot write at every checkpoint grows with it).
    """
    if isinstance(record_bytes, bool) or not isinstance(record_bytes, int) or record_bytes < 0:
        raise ValueError(f"a record's size is a byte count ≥ 0, not {record_bytes!r}")
    if file is None or file.appended_bytes + record_bytes > file.base_bytes:
        return "compact"
    return "append"


# --- B16: independent sync steps ----------------------------------------------------------------

SyncAction = Literal["write-checkpoint", "rebuild-search"]


def _action_of(role: ReplicaRole) -> SyncAction:
    return "write-checkpoint" if role == "backup" else "rebuild-search"


@attrs.frozen
class SyncStep:
    """Bring one replica up to `target_revision` from the primary."""

    replica: str
    action: SyncAction
    target_revision: int


@attrs.frozen
class SyncPlan:
    """B16: steps the shell runs independently — each in its own try, none skipped because
    another failed. `blocked` names why nothing can run (no primary to sync from)."""

    steps: tuple[SyncStep, ...] = ()
    primary_revision: int | None = None
    blocked: str | None = None


def _positive_revisions(_instance: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"a sync cadence counts at least 1 revision, not {value!r}")


def _seconds(_instance: object, _attribute: object, value: float) -> None:
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or value < 0):
        raise ValueError(f"a sync cadence's seconds are a finite number ≥ 0, not {value!r}")


@attrs.frozen
class SyncCadence:
    """When a replica behind the primary is brought level (B14: until then it is only
    "pending sync", which is normal).

    A replica behind is synced when it is `revisions` or more revisions behind, or when its
    last sync is `seconds` or more old (or in the future: the clock was set back), or when it
    was never synced, or when the caller asks for a flush (pause, stop, a clean exit). Between
    those, it stays behind: the primary is the only reliable revision (B13), and rewriting a
    whole-thread backup after every commit makes a long run quadratic.
    """

    revisions: int = attrs.field(default=25, validator=_positive_revisions)
    seconds: float = attrs.field(default=60.0, validator=_seconds)


#: The daemon's cadence: a backup at most 25 revisions or about a minute old (docs/store.md).
DEFAULT_CADENCE: Final = SyncCadence()


def replica_sync_due(
    primary_revision: int,
    replica: ReplicaState,
    *,
    cadence: SyncCadence,
    now: datetime,
    synced_at: datetime | None,
    flush: bool = False,
) -> bool:
    """Whether `replica`, behind the primary at `primary_revision`, is due for a sync now under
    `cadence` (see `SyncCadence`); `synced_at` is when it was last brought level, if known."""
    if flush or synced_at is None:
        return True
    if primary_revision - (replica.revision or 0) >= cadence.revisions:
        return True
    age = (now - synced_at).total_seconds()
    return age >= cadence.seconds or age < 0


def plan_replica_sync(
    primary_revision: int | None,
    replicas: Iterable[ReplicaState],
    *,
    repair: bool = False,
    cadence: SyncCadence | None = None,
    now: datetime | None = None,
    synced_at: Mapping[str, datetime] | None = None,
    flush: bool = False,
) -> SyncPlan:
    """Steps to bring replicas in line with the primary (B14, B16).

    Replicas behind the primary are synced. With `repair`, replicas *ahead* of it are rewritten
    from it too (the primary is the only reliable revision, B13); without it they are left for
    a person to look at. Without a primary there is nothing to sync from.

    With a `cadence` (and `now`), a replica behind is synced only when `replica_sync_due` says
    so, given when it was last synced (`synced_at`, by replica name; a replica missing from it
    was never synced) and `flush`; the others stay "pending sync" (B14). Without one, every
    replica behind is synced, as after every commit.
    """
    replicas = tuple(replicas)
    audit = audit_replicas(primary_revision, replicas)
    if audit.primary_revision is None:
        return SyncPlan((), None, "primary-missing" if audit.drift else None)
    wanted = {"pending-sync", "replica-ahead"} if repair else {"pending-sync"}
    targets = {i.replica for i in audit.issues if i.kind in wanted}
    if cadence is not None:
        if now is None:
            raise ValueError("a sync cadence needs the time now")
        last = synced_at or {}
        behind = {i.replica for i in audit.issues if i.kind == "pending-sync"}
        primary = audit.primary_revision
        targets = {
            r.name for r in replicas
            if r.name in targets and (r.name not in behind or replica_sync_due(
                primary, r, cadence=cadence, now=now, synced_at=last.get(r.name), flush=flush))
        }
    steps = tuple(
        SyncStep(r.name, _action_of(r.role), audit.primary_revision)
        for r in replicas
        if r.name in targets
    )
    return SyncPlan(steps, audit.primary_revision)


@attrs.frozen
class SyncOutcome:
    """What the shell saw running one step: `ok`, or the error text."""

    replica: str
    ok: bool
    error: str = ""


@attrs.frozen
class SyncFailure:
    replica: str
    error: str


#: The error recorded for a planned step the shell reported nothing about.
NO_OUTCOME: Final = "no outcome reported"


@attrs.frozen
class SyncResult:
    """B16: which replicas were synced and which failed (with why)."""

    succeeded: tuple[str, ...] = ()
    failed: tuple[SyncFailure, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def failed_replicas(self) -> tuple[str, ...]:
        return tuple(f.replica for f in self.failed)


def combine_sync_results(plan: SyncPlan, outcomes: Iterable[SyncOutcome]) -> SyncResult:
    """Fold each step's outcome into one result, in plan order (B16).

    A step with no outcome counts as failed; an outcome for a replica the plan did not name is
    the caller's mistake and raises ValueError.
    """
    by_replica: dict[str, SyncOutcome] = {}
    planned = {s.replica for s in plan.steps}
    for outcome in outcomes:
        if outcome.replica not in planned:
            raise ValueError(f"outcome for replica {outcome.replica!r}, which no step names")
        by_replica[outcome.replica] = outcome
    succeeded: list[str] = []
    failed: list[SyncFailure] = []
    for step in plan.steps:
        seen = by_replica.get(step.replica)
        if seen is None:
            failed.append(SyncFailure(step.replica, NO_OUTCOME))
        elif seen.ok:
            succeeded.append(step.replica)
        else:
            failed.append(SyncFailure(step.replica, seen.error or "failed"))
    return SyncResult(tuple(succeeded), tuple(failed))


# --- B17: the search-replica gate ---------------------------------------------------------------

SearchGateAction = Literal["skip", "repair-identity", "block", "sync"]


@attrs.frozen
class SearchGateDecision:
    action: SearchGateAction
    reason: str


def search_replica_gate(
    *,
    has_state: bool,
    mutation_context: bool,
    repair_attempted: bool,
    dirty: bool,
    config_valid: bool,
    sync_pending: bool = False,
) -> SearchGateDecision:
    """B17, checked in this order: no run state → skip; no mutation context → repair-identity
    (once), then block; replica clean → skip; a sync already running → skip; invalid config →
    skip; else sync."""
    if not has_state:
        return SearchGateDecision("skip", "no-state")
    if not mutation_context:
        if not repair_attempted:
            return SearchGateDecision("repair-identity", "missing-mutation-context")
        return SearchGateDecision("block", "missing-mutation-context")
    if not dirty:
        return SearchGateDecision("skip", "replica-clean")
    if sync_pending:
        return SearchGateDecision("skip", "sync-pending")
    if not config_valid:
        return SearchGateDecision("skip", "invalid-config")
    return SearchGateDecision("sync", "replica-dirty")
