"""Retried turns reuse their input (SPEC B18-B20)."""

from __future__ import annotations

import pytest

from autodev_core.control.turn_input import (
    InputRecord,
    Rollback,
    TurnInputPlan,
    TurnStart,
    UnknownTurnType,
    bind_input_context,
    classify_turn,
    plan_turn_input,
)
from autodev_core.serialization import from_json, to_json

RECORD = bind_input_context("msg-4", "please review the patch", "CONTEXT v1")


@pytest.mark.parametrize("turn_type", ["normal", " Normal "])
def test_B18_normal_is_fresh(turn_type: str) -> None:
    assert classify_turn(turn_type) == "fresh"


@pytest.mark.parametrize(
    "turn_type", ["retry", "failover", "continue", "swipe", "regenerate", "RETRY"]
)
def test_B18_repeats_are_no_new_input(turn_type: str) -> None:
    assert classify_turn(turn_type) == "no-new-input"


@pytest.mark.parametrize("turn_type", ["", "quiet", "impersonate", "reroll?"])
def test_B18_unknown_turn_type_is_a_clear_error_not_a_guess(turn_type: str) -> None:
    with pytest.raises(UnknownTurnType, match="unknown turn type") as caught:
        classify_turn(turn_type)
    assert "normal" in str(caught.value) and "retry" in str(caught.value)


def test_B18_the_input_source_is_not_an_input_of_the_decision() -> None:
    # Same parent, same text: only the host's turn type decides whether the context is reused.
    fresh = plan_turn_input(TurnStart("normal", "msg-4", "please review the patch"), RECORD)
    retry = plan_turn_input(TurnStart("retry", "msg-4", "please review the patch"), RECORD)
    assert (fresh.kind, fresh.action) == ("fresh", "compute")
    assert (retry.kind, retry.action) == ("no-new-input", "reapply")


def test_B19_no_new_input_reapplies_the_persisted_context() -> None:
    plan = plan_turn_input(TurnStart("failover", "msg-4", "please review the patch"), RECORD)
    assert plan.action == "reapply"
    assert plan.reason == "record-reused"
    assert plan.context == "CONTEXT v1"
    assert not plan.needs_compute


def test_B19_recompute_when_there_is_no_record() -> None:
    plan = plan_turn_input(TurnStart("retry", "msg-4", "please review the patch"), None)
    assert (plan.action, plan.reason, plan.context) == ("recompute", "no-record", None)
    assert plan.needs_compute


def test_B19_recompute_when_the_bound_text_changed() -> None:
    plan = plan_turn_input(TurnStart("continue", "msg-4", "please review the patch!"), RECORD)
    assert (plan.action, plan.reason) == ("recompute", "parent-text-changed")


def test_B19_record_of_another_parent_input_is_not_reused() -> None:
    plan = plan_turn_input(TurnStart("retry", "msg-5", "please review the patch"), RECORD)
    assert (plan.action, plan.reason) == ("recompute", "other-parent")


def test_B19_binding_a_computed_context() -> None:
    assert bind_input_context("msg-4", "t", "c") == InputRecord("msg-4", "t", "c")


def test_B20_reapplying_the_input_still_rolls_back_the_failed_attempt() -> None:
    turn = TurnStart("retry", "msg-4", "please review the patch",
                     committed_revision=6, working_revision=8)
    plan = plan_turn_input(turn, RECORD)
    assert plan.action == "reapply"
    assert plan.rollback == Rollback(True, 6, 7, 8)


@pytest.mark.parametrize("turn_type", ["normal", "retry"])
def test_B20_rollback_is_part_of_every_decision(turn_type: str) -> None:
    dirty = plan_turn_input(TurnStart(turn_type, "m", "t", 2, 3), None)
    assert dirty.rollback.required and dirty.rollback.to_revision == 2
    clean = plan_turn_input(TurnStart(turn_type, "m", "t", 3, 3), None)
    assert clean.rollback == Rollback(False, 3)


def test_B20_revisions_are_non_negative_ints() -> None:
    with pytest.raises(ValueError):
        TurnStart("retry", "m", "t", committed_revision=-1)


def test_0_3_turn_input_values_round_trip() -> None:
    plan = plan_turn_input(TurnStart("retry", "msg-4", "please review the patch", 1, 2), RECORD)
    assert from_json(to_json(plan), TurnInputPlan) == plan
    assert from_json(to_json(RECORD), InputRecord) == RECORD


# --- issue 39: the helper an orchestrator calls with `StartCall.turn_kind` -----------------------


def test_B18_a_calls_turn_kind_is_a_host_turn_type() -> None:
    from autodev_core.control.turn_input import turn_type_of

    assert turn_type_of("fresh") == "normal"
    assert turn_type_of("no-new-input") == "retry"
    with pytest.raises(UnknownTurnType, match="unknown turn type 'normal-ish'"):
        turn_type_of("normal-ish")


def test_B19_a_retried_call_reapplies_its_saved_input() -> None:
    from autodev_core.control.turn_input import plan_call_input

    retry = plan_call_input("no-new-input", RECORD, parent_input_id="msg-4",
                            parent_text="please review the patch")
    assert (retry.kind, retry.action, retry.context) == ("no-new-input", "reapply", "CONTEXT v1")
    fresh = plan_call_input("fresh", RECORD, parent_input_id="msg-4",
                            parent_text="please review the patch")
    assert (fresh.kind, fresh.action, fresh.context) == ("fresh", "compute", None)
    changed = plan_call_input("no-new-input", RECORD, parent_input_id="msg-4",
                              parent_text="please review the new patch", committed_revision=2,
                              working_revision=3)
    assert (changed.action, changed.reason) == ("recompute", "parent-text-changed")
    assert changed.rollback == Rollback(True, 2, 3, 3)  # B20 all the same
