"""Retried turns reuse their input, and still roll back (SPEC B18-B20).

A turn is *fresh* (new input since the participant's last turn) or *no-new-input* (a retry, a
failover hop, a continue). Only the host's turn type says which (B18); nothing here looks at
where the input came from. A no-new-input turn reapplies the prompt context persisted with its
parent input, bound to that input's text; it is computed afresh only when there is no record or
the text changed (B19). Deciding what to inject is separate from computing it: the plan says
`reapply` (here is the context) or `compute`/`recompute` (the caller computes, then binds the
result with `bind_input_context` for the next retry). Whatever the plan, the rollback of what a
failed attempt left uncommitted is part of the decision and is never skipped (B20).
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from ..errors import AutodevError
from ..names import TurnKind as TurnKind  # B18, stated once in `names`

#: B18: host turn types that bring new input.
FRESH_TURN_TYPES: Final = frozenset({"normal"})
#: B18: host turn types that repeat a turn on the same input.
NO_NEW_INPUT_TURN_TYPES: Final = frozenset(
    {"retry", "failover", "continue", "swipe", "regenerate"}
)


class UnknownTurnType(AutodevError, ValueError):
    """The host named a turn type this library does not know (B18: never guessed)."""

    def __init__(self, turn_type: object) -> None:
        self.turn_type = turn_type
        known = ", ".join(sorted(FRESH_TURN_TYPES | NO_NEW_INPUT_TURN_TYPES))
        super().__init__(f"unknown turn type {turn_type!r}: expected one of {known}")


def classify_turn(turn_type: str) -> TurnKind:
    """B18: "fresh" or "no-new-input" from the host's turn type (trimmed, case-insensitive).

    An unknown type raises `UnknownTurnType`: guessing "fresh" would recompute a retry's input,
    guessing "no-new-input" would replay stale context over new input.
    """
    if not isinstance(turn_type, str):
        raise UnknownTurnType(turn_type)
    name = turn_type.strip().lower()
    if name in FRESH_TURN_TYPES:
        return "fresh"
    if name in NO_NEW_INPUT_TURN_TYPES:
        return "no-new-input"
    raise UnknownTurnType(turn_type)


def _revision(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a revision is an int ≥ 0, not {value!r}")
    return value


@attrs.frozen
class InputRecord:
    """The prompt context computed for a parent input, bound to that input's text (B19)."""

    parent_input_id: str
    bound_text: str
    context: str


def bind_input_context(parent_input_id: str, parent_text: str, context: str) -> InputRecord:
    """The record to persist with the parent input once its context has been computed (B19)."""
    return InputRecord(parent_input_id, parent_text, context)


@attrs.frozen
class TurnStart:
    """What the host says about the turn about to start.

    `parent_input_id` / `parent_text`: the input the turn answers. `committed_revision`: the
    last revision of the run state the store confirmed; `working_revision`: the revision the
    previous attempt had reached in memory (higher means it left changes uncommitted, B20).
    """

    turn_type: str
    parent_input_id: str
    parent_text: str
    committed_revision: int = attrs.field(default=0, converter=_revision)
    working_revision: int = attrs.field(default=0, converter=_revision)


@attrs.frozen
class Rollback:
    """B20: roll the run state back to `to_revision`, discarding what lies above it."""

    required: bool
    to_revision: int
    discarded_from: int = 0
    discarded_to: int = 0


InputAction = Literal["compute", "reapply", "recompute"]
InputReason = Literal[
    "fresh-input", "record-reused", "no-record", "other-parent", "parent-text-changed",
]


@attrs.frozen
class TurnInputPlan:
    """What the turn's input context is and what must be undone first.

    `action`: "compute" (fresh turn), "reapply" (`context` is the persisted context to inject
    as is) or "recompute" (no-new-input but no usable record; `reason` says why). `rollback`
    is always present and always to be carried out when `required` (B20).
    """

    kind: TurnKind
    action: InputAction
    reason: InputReason
    rollback: Rollback
    context: str | None = None

    @property
    def needs_compute(self) -> bool:
        return self.action != "reapply"


def rollback_for(turn: TurnStart) -> Rollback:
    """B20: anything above the committed revision was left by a failed attempt: undo it."""
    if turn.working_revision > turn.committed_revision:
        return Rollback(
            True, turn.committed_revision, turn.committed_revision + 1, turn.working_revision
        )
    return Rollback(False, turn.committed_revision)


def plan_turn_input(turn: TurnStart, record: InputRecord | None) -> TurnInputPlan:
    """B18-B20: classify the turn, then reuse or compute its input context, with the rollback."""
    kind = classify_turn(turn.turn_type)
    rollback = rollback_for(turn)
    if kind == "fresh":
        return TurnInputPlan(kind, "compute", "fresh-input", rollback)
    if record is None:
        return TurnInputPlan(kind, "recompute", "no-record", rollback)
    if record.parent_input_id != turn.parent_input_id:
        return TurnInputPlan(kind, "recompute", "other-parent", rollback)
    if record.bound_text != turn.parent_text:
        return TurnInputPlan(kind, "recompute", "parent-text-changed", rollback)
    return TurnInputPlan(kind, "reapply", "record-reused", rollback, record.context)


#: B18: the host turn type of each `StartCall.turn_kind` (the scheduler's word for the same thing).
TURN_TYPE_OF_KIND: Final[dict[str, str]] = {"fresh": "normal", "no-new-input": "retry"}


def turn_type_of(turn_kind: str) -> str:
    """B18: the host turn type `plan_turn_input` reads for a `StartCall`'s `turn_kind`: "fresh"
    is "normal", "no-new-input" is "retry". Anything else raises `UnknownTurnType`."""
    if turn_kind not in TURN_TYPE_OF_KIND:
        raise UnknownTurnType(turn_kind)
    return TURN_TYPE_OF_KIND[turn_kind]


def plan_call_input(
    turn_kind: str,
    record: InputRecord | None,
    *,
    parent_input_id: str,
    parent_text: str,
    committed_revision: int = 0,
    working_revision: int = 0,
) -> TurnInputPlan:
    """B18-B20 for a `StartCall`: `plan_turn_input` with the call's `turn_kind` ("fresh" or
    "no-new-input") as the turn type. A no-new-input call (a retry, a hop) whose `record` is
    bound to the same parent input reapplies `record.context`; otherwise compute the input and
    keep `bind_input_context(parent_input_id, parent_text, computed)` for the next retry."""
    turn = TurnStart(turn_type_of(turn_kind), parent_input_id, parent_text,
                     committed_revision, working_revision)
    return plan_turn_input(turn, record)
