"""The mutation gate and the recovery guard (SPEC B10-B12)."""

from __future__ import annotations

from typing import Any

import pytest

from autodev_core.control.identity import NO_RUN, resolve_active_identity
from autodev_core.control.mutation import (
    LOAD_STATES,
    WRITABLE_LOAD_STATES,
    MutationBlocked,
    MutationContext,
    RecoveryAborted,
    assert_recovery_still_active,
    ensure_mutation_ready,
    mutation_block_kind,
    mutation_block_reason,
    recovery_still_active,
)
from autodev_core.serialization import from_json, to_json

RUN = resolve_active_identity(run_id="run-7", aliases=["r7"])
OP = "append to the thread"


def ctx(**fields: Any) -> MutationContext:
    fields.setdefault("identity", RUN)
    fields.setdefault("load_state", "loaded")
    return MutationContext(**fields)


def test_B10_load_states() -> None:
    assert LOAD_STATES == (
        "no-run", "loading", "loaded", "shadow-restored", "empty-confirmed", "blocked",
    )
    with pytest.raises(ValueError):
        MutationContext(RUN, load_state="ready")  # type: ignore[arg-type]


@pytest.mark.parametrize("state", LOAD_STATES)
def test_B10_writable_only_when_loaded_or_empty_confirmed(state: str) -> None:
    reason = mutation_block_reason(OP, ctx(load_state=state))
    assert (reason is None) == (state in WRITABLE_LOAD_STATES)


def test_B10_store_ready_ends_the_wait_of_a_load_or_shadow_restore() -> None:
    assert mutation_block_reason(OP, ctx(load_state="loading", store_ready=True)) is None
    assert mutation_block_reason(OP, ctx(load_state="shadow-restored", store_ready=True)) is None
    assert mutation_block_kind(ctx(load_state="blocked", store_ready=True)) == "store-blocked"
    assert mutation_block_kind(ctx(load_state="no-run", store_ready=True)) == "no-active-run"


def test_B11_reasons_in_order_each_naming_the_operation() -> None:
    everything = ctx(
        load_state="loading", restore_lock=True, writes_blocked=True, initialised=False,
        identity=NO_RUN,
    )
    expected = [
        ("restore-lock", "Cannot append to the thread: a restore of the run state holds the lock."),
        ("no-active-run", "Cannot append to the thread: there is no active run."),
        ("loading", "Cannot append to the thread: the run state is still loading."),
        ("shadow-restored", "Cannot append to the thread: the run state was restored from a "
                            "shadow copy and is waiting for the canonical store."),
        ("store-blocked", "Cannot append to the thread: the canonical store is blocked."),
        ("not-initialised", "Cannot append to the thread: the run state is not initialised."),
    ]
    steps: list[dict[str, Any]] = [
        {"restore_lock": False},
        {"identity": RUN},
        {"load_state": "shadow-restored"},
        {"load_state": "blocked"},
        {"load_state": "loaded", "writes_blocked": False},
        {"initialised": True},
    ]
    context = everything
    for (kind, sentence), change in zip(expected, steps, strict=True):
        assert mutation_block_kind(context) == kind
        assert mutation_block_reason(OP, context) == sentence
        context = MutationContext(**{**_fields(context), **change})
    assert mutation_block_reason(OP, context) is None


def _fields(context: MutationContext) -> dict[str, Any]:
    return {name: getattr(context, name) for name in (
        "identity", "load_state", "restore_lock", "store_ready", "writes_blocked", "initialised",
    )}


def test_B11_no_run_load_state_is_no_active_run() -> None:
    assert mutation_block_kind(ctx(load_state="no-run")) == "no-active-run"


def test_B11_queued_write_without_recovery_copy_blocks_the_store() -> None:
    assert mutation_block_kind(ctx(writes_blocked=True)) == "store-blocked"


def test_B11_operation_must_be_named() -> None:
    with pytest.raises(ValueError):
        mutation_block_reason("  ", ctx(load_state="loading"))


def test_B11_ensure_mutation_ready_raises_with_the_sentence() -> None:
    ensure_mutation_ready(OP, ctx())
    with pytest.raises(MutationBlocked, match="still loading") as caught:
        ensure_mutation_ready(OP, ctx(load_state="loading"))
    assert caught.value.kind == "loading"


def test_B12_recovery_continues_while_its_run_is_active() -> None:
    assert recovery_still_active("r7", RUN)
    assert_recovery_still_active(" run-7 ", RUN)


def test_B12_recovery_aborts_naming_both_runs_when_the_run_changed() -> None:
    other = resolve_active_identity(run_id="run-8")
    with pytest.raises(RecoveryAborted) as caught:
        assert_recovery_still_active("run-7", other)
    message = str(caught.value)
    assert "'run-7'" in message and "'run-8'" in message
    assert (caught.value.started_for, caught.value.active) == ("run-7", "run-8")


def test_B12_recovery_aborts_when_no_run_is_active_or_it_started_for_none() -> None:
    with pytest.raises(RecoveryAborted, match="no active run"):
        assert_recovery_still_active("run-7", NO_RUN)
    assert not recovery_still_active("", RUN)


def test_0_3_mutation_context_round_trips() -> None:
    context = ctx(load_state="shadow-restored", store_ready=True)
    assert from_json(to_json(context), MutationContext) == context
