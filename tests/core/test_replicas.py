"""Replicas and checkpoints (SPEC B13-B17)."""

from __future__ import annotations

import pytest

from autodev_core.control.replicas import (
    NO_OUTCOME,
    PRIMARY_CHECKPOINT_SOURCE_EMPTY,
    CheckpointPlan,
    PrimaryExport,
    ReplicaAudit,
    ReplicaState,
    SyncFailure,
    SyncOutcome,
    SyncPlan,
    SyncResult,
    SyncStep,
    audit_replicas,
    combine_sync_results,
    plan_checkpoint,
    plan_checkpoint_restore,
    plan_replica_sync,
    search_replica_gate,
)
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml


def checkpoint(revision: int | None) -> ReplicaState:
    return ReplicaState("checkpoint", "backup", revision)


def search(revision: int | None) -> ReplicaState:
    return ReplicaState("search", "search", revision)


def test_B13_replica_roles_are_backup_or_search() -> None:
    with pytest.raises(ValueError):
        ReplicaState("primary", "canonical", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ReplicaState(" ", "backup", 3)
    assert checkpoint(0).revision is None, "revision ≤ 0 is nothing stored"


def test_B14_primary_ahead_is_pending_sync_not_drift() -> None:
    audit = audit_replicas(5, (checkpoint(3), search(None)))
    assert audit.status == "pending-sync"
    assert not audit.drift
    assert audit.pending == ("checkpoint", "search")
    assert audit.drifted == ()


def test_B14_all_equal_is_in_sync() -> None:
    assert audit_replicas(5, (checkpoint(5), search(5))) == ReplicaAudit("in-sync", 5, ())


def test_B14_replica_ahead_is_drift() -> None:
    audit = audit_replicas(5, (checkpoint(7), search(2)))
    assert audit.status == "drift"
    assert audit.drifted == ("checkpoint",)
    assert audit.pending == ("search",)


def test_B14_missing_primary_with_replica_data_is_drift() -> None:
    audit = audit_replicas(None, (checkpoint(4), search(None)))
    assert audit.status == "drift"
    assert [(i.replica, i.kind) for i in audit.issues] == [("checkpoint", "primary-missing")]


def test_B14_nothing_anywhere_is_empty() -> None:
    assert audit_replicas(0, (checkpoint(None),)).status == "empty"


def test_B14_restore_refused_when_the_primary_is_ahead() -> None:
    decision = plan_checkpoint_restore(5, 3)
    assert (decision.allowed, decision.reason) == (False, "primary-ahead")


@pytest.mark.parametrize(
    ("primary", "backup", "allowed", "reason"),
    [
        (None, 3, True, "primary-missing"),
        (0, 3, True, "primary-missing"),
        (3, 5, True, "checkpoint-ahead"),
        (3, 3, False, "up-to-date"),
        (3, None, False, "no-checkpoint"),
        (None, None, False, "no-checkpoint"),
    ],
)
def test_B14_restore_decisions(
    primary: int | None, backup: int | None, allowed: bool, reason: str
) -> None:
    decision = plan_checkpoint_restore(primary, backup)
    assert (decision.allowed, decision.reason) == (allowed, reason)


def test_B15_checkpoint_from_the_primary_snapshot() -> None:
    plan = plan_checkpoint("sqlite", PrimaryExport(7), in_memory_revision=9)
    assert plan == CheckpointPlan(True, "primary-snapshot", 7)


@pytest.mark.parametrize("export", [None, PrimaryExport(0), PrimaryExport(-1),
                                    PrimaryExport(7, ok=False)])
def test_B15_empty_or_failed_export_fails_and_never_falls_back(
    export: PrimaryExport | None,
) -> None:
    plan = plan_checkpoint(" SQLite ", export, in_memory_revision=9)
    assert plan == CheckpointPlan(False, None, 0, PRIMARY_CHECKPOINT_SOURCE_EMPTY)
    assert plan.failure == "primary-checkpoint-source-empty"


def test_B15_non_canonical_primary_checkpoints_in_memory_state() -> None:
    assert plan_checkpoint("memory", None, in_memory_revision=4) == CheckpointPlan(
        True, "in-memory", 4
    )
    assert not plan_checkpoint("memory", None, in_memory_revision=0).ok


def test_B16_sync_plan_has_one_step_per_replica_behind() -> None:
    plan = plan_replica_sync(5, (checkpoint(3), search(None)))
    assert plan == SyncPlan(
        (SyncStep("checkpoint", "write-checkpoint", 5), SyncStep("search", "rebuild-search", 5)),
        5,
    )


def test_B16_replica_ahead_is_rewritten_only_on_repair() -> None:
    replicas = (checkpoint(7), search(5))
    assert plan_replica_sync(5, replicas).steps == ()
    assert plan_replica_sync(5, replicas, repair=True).steps == (
        SyncStep("checkpoint", "write-checkpoint", 5),
    )


def test_B16_no_primary_nothing_to_sync_from() -> None:
    plan = plan_replica_sync(None, (checkpoint(3),))
    assert (plan.steps, plan.blocked) == ((), "primary-missing")


def test_B16_one_failure_does_not_stop_the_others() -> None:
    plan = plan_replica_sync(5, (checkpoint(3), search(None)))
    result = combine_sync_results(plan, [
        SyncOutcome("checkpoint", False, "disk full"), SyncOutcome("search", True),
    ])
    assert result == SyncResult(("search",), (SyncFailure("checkpoint", "disk full"),))
    assert not result.ok
    assert result.failed_replicas == ("checkpoint",)


def test_B16_a_step_with_no_outcome_failed() -> None:
    plan = plan_replica_sync(5, (checkpoint(3), search(None)))
    result = combine_sync_results(plan, [SyncOutcome("search", True)])
    assert result.failed == (SyncFailure("checkpoint", NO_OUTCOME),)
    assert combine_sync_results(plan, [
        SyncOutcome("search", True), SyncOutcome("checkpoint", True),
    ]).ok


def test_B16_outcome_for_an_unplanned_replica_is_a_caller_error() -> None:
    plan = plan_replica_sync(5, (checkpoint(3),))
    with pytest.raises(ValueError, match="search"):
        combine_sync_results(plan, [SyncOutcome("search", True)])


def gate(**overrides: bool) -> tuple[str, str]:
    facts = {"has_state": True, "mutation_context": True, "repair_attempted": False,
             "dirty": True, "config_valid": True, "sync_pending": False}
    facts.update(overrides)
    decision = search_replica_gate(**facts)
    return decision.action, decision.reason


def test_B17_search_replica_gate() -> None:
    assert gate() == ("sync", "replica-dirty")
    assert gate(has_state=False, mutation_context=False) == ("skip", "no-state")
    assert gate(dirty=False) == ("skip", "replica-clean")
    assert gate(config_valid=False) == ("skip", "invalid-config")
    assert gate(sync_pending=True) == ("skip", "sync-pending")
    assert gate(mutation_context=False) == ("repair-identity", "missing-mutation-context")
    assert gate(mutation_context=False, repair_attempted=True) == (
        "block", "missing-mutation-context",
    )


def test_0_3_replica_values_round_trip() -> None:
    replicas = (checkpoint(3), search(9))
    audit = audit_replicas(5, replicas)
    assert from_json(to_json(audit), ReplicaAudit) == audit
    plan = plan_replica_sync(5, replicas, repair=True)
    assert from_yaml(to_yaml(plan), SyncPlan) == plan
    result = combine_sync_results(plan, [])
    assert from_json(to_json(result), SyncResult) == result


def test_B14_replica_names_are_unique() -> None:
    with pytest.raises(ValueError, match="unique"):
        audit_replicas(5, (checkpoint(3), ReplicaState("checkpoint", "search", 4)))
