"""May the run state be written now? The mutation gate and the recovery guard (SPEC B10-B12).

The run state is written only when it is known to belong to the active run and to be whole:
not while a restore holds the lock, not without an active run, not while loading, not after a
shadow restore that the canonical store has not yet confirmed, not while the canonical store is
blocked. The caller gathers the facts into a `MutationContext` once per operation (B2) and asks.
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from ..errors import AutodevError
from .identity import RunIdentity, normalize_run_id

LoadState = Literal["no-run", "loading", "loaded", "shadow-restored", "empty-confirmed", "blocked"]
#: B10: every load state.
LOAD_STATES: tuple[str, ...] = (
    "no-run", "loading", "loaded", "shadow-restored", "empty-confirmed", "blocked",
)
#: B10: the load states in which the run state may be written.
WRITABLE_LOAD_STATES: Final = frozenset({"loaded", "empty-confirmed"})


@attrs.frozen
class MutationContext:
    """The facts the gate reads, gathered once per operation (B2).

    `store_ready`: the canonical store reports it is ready, which ends a load or a shadow
    restore's wait (B10). `writes_blocked` is `PersistenceState.writes_blocked` (B6): a write
    is queued with no recovery copy, so the canonical store is blocked. `initialised`: the run
    state has been set up at all.
    """

    identity: RunIdentity
    load_state: LoadState = attrs.field(
        default="no-run", validator=attrs.validators.in_(LOAD_STATES)
    )
    restore_lock: bool = False
    store_ready: bool = False
    writes_blocked: bool = False
    initialised: bool = True


BlockKind = Literal[
    "restore-lock", "no-active-run", "loading", "shadow-restored", "store-blocked",
    "not-initialised",
]

#: B11: why writing is paused, one English sentence each, in the order they are checked.
_SENTENCES: Final = (
    ("restore-lock", "a restore of the run state holds the lock"),
    ("no-active-run", "there is no active run"),
    ("loading", "the run state is still loading"),
    ("shadow-restored",
     "the run state was restored from a shadow copy and is waiting for the canonical store"),
    ("store-blocked", "the canonical store is blocked"),
    ("not-initialised", "the run state is not initialised"),
)


def mutation_block_kind(context: MutationContext) -> BlockKind | None:
    """The first reason of B11 that holds, as a short code; None when writing is allowed."""
    waiting = not context.store_ready
    if context.restore_lock:
        return "restore-lock"
    if not context.identity.is_active or context.load_state == "no-run":
        return "no-active-run"
    if context.load_state == "loading" and waiting:
        return "loading"
    if context.load_state == "shadow-restored" and waiting:
        return "shadow-restored"
    if context.load_state == "blocked" or context.writes_blocked:
        return "store-blocked"
    if not context.initialised or (
        context.load_state not in WRITABLE_LOAD_STATES and waiting
    ):
        return "not-initialised"
    return None


def mutation_block_reason(operation: str, context: MutationContext) -> str | None:
    """B11: a sentence naming `operation` and why it cannot write now, or None when it can.

    `operation` is a verb phrase: `mutation_block_reason("append to the thread", ctx)` →
    "Cannot append to the thread: the run state is still loading."
    """
    kind = mutation_block_kind(context)
    if kind is None:
        return None
    sentence = dict(_SENTENCES)[kind]
    return f"Cannot {_operation(operation)}: {sentence}."


def _operation(operation: str) -> str:
    if not isinstance(operation, str) or not operation.strip():
        raise ValueError("name the operation the gate is asked about (e.g. 'append to the thread')")
    return operation.strip()


class MutationBlocked(AutodevError):
    """Raised by `ensure_mutation_ready`; `kind` is the B11 code, the message its sentence."""

    def __init__(self, message: str, *, kind: BlockKind) -> None:
        self.kind = kind
        super().__init__(message)


def ensure_mutation_ready(operation: str, context: MutationContext) -> None:
    """Raise `MutationBlocked` unless `operation` may write now (B10, B11)."""
    kind = mutation_block_kind(context)
    if kind is not None:
        reason = mutation_block_reason(operation, context)
        raise MutationBlocked(reason or "", kind=kind)


# --- B12: the recovery guard ----------------------------------------------------------------------


class RecoveryAborted(AutodevError):
    """An asynchronous recovery found that the active run changed under it (B12)."""

    def __init__(self, started_for: str, active: str) -> None:
        self.started_for = started_for
        self.active = active
        now = f"the active run is now {active!r}" if active else "there is no active run now"
        super().__init__(
            f"recovery aborted: it started for run {started_for!r} but {now}; "
            "nothing was written"
        )


def recovery_still_active(started_for: str, identity: RunIdentity) -> bool:
    """True when the run a recovery started for is still the active run (B3 equivalence)."""
    started = normalize_run_id(started_for)
    return bool(started) and identity.is_active and identity.names(started)


def assert_recovery_still_active(started_for: str, identity: RunIdentity) -> None:
    """B12: call before each write of an asynchronous recovery, with the identity resolved for
    that write; raises `RecoveryAborted` naming both runs when the active run changed."""
    if not recovery_still_active(started_for, identity):
        raise RecoveryAborted(normalize_run_id(started_for), identity.run_id)
