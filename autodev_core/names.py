"""The words the core and the fast `status` path share, each stated once (issue 27).

Plain constants and `Literal` types, with no import but `typing`: `autodev status` reads a
stored state without loading attrs or the scheduler (C6, issue 13), and checks what it reads
against these same values (the shell's `stored_status` and `status_read`). Each tuple is the
arguments of its `Literal`, so a status, a turn kind or a log kind is written once, and the type
checker and the validators see the same words.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

#: The statuses in which the run sleeps until a deadline (A18, A26-A28).
WaitStatus = Literal["rate_limited", "unreachable", "backing_off"]
#: A42: the only statuses a run has, in the order the SPEC and the diagram list them.
Status = Literal["running", WaitStatus, "paused", "stopped"]
STATUSES: Final[tuple[Status, ...]] = get_args(Status)
WAIT_STATUSES: Final[tuple[WaitStatus, ...]] = get_args(WaitStatus)
#: Why a run is `paused` (A42): the operator asked (`PauseRequested`), a participant's empty
#: turns (A31), the failures in a row (A29), or claude's login (A32).
PauseReason = Literal["operator", "empty", "failures", "login"]
PAUSE_REASONS: Final[tuple[PauseReason, ...]] = get_args(PauseReason)
#: Each reason in a few words, written after `paused — `: the panel's tab badge and
#: notification, and the notices' titles (docs/panel.md, docs/notifications.md).
PAUSE_NEEDS: Final[dict[str, str]] = {
    "operator": "by the operator",
    "empty": "turns ended without a post",
    "failures": "gave up after failed calls",
    "login": "login needed",
}

#: B18: a turn is fresh (new input since the participant's last turn) or a no-new-input retry.
TurnKind = Literal["fresh", "no-new-input"]
TURN_KINDS: Final[tuple[TurnKind, ...]] = get_args(TurnKind)

#: What a `Log` line says, for programs (the `message` is for people). One kind per line of
#: SPEC A; `note` is a line with no structured fields (none of the scheduler's); the three
#: `*near-limit` kinds are issue 25's (`Policy.headroom`, off by default).
LogKind = Literal[
    "limit", "posted", "outage", "reachable",
    "hop-limited", "hop-unreachable", "handover-limited", "handover-unreachable",
    "lifted", "wait-limited", "wait-unreachable", "wait-own",
    "failed", "gave-up", "empty-turns", "not-logged-in",
    "max-iterations", "max-runtime", "note",
    "near-limit", "hop-near-limit", "handover-near-limit", "cleared",
]
LOG_KINDS: Final[tuple[LogKind, ...]] = get_args(LogKind)

#: The provider CLIs autodev knows (A8; Antigravity's binary is `agy`).
PROVIDERS: Final[tuple[str, ...]] = ("claude", "codex", "agy")
#: A model name (A9): its first character, then any of these.
MODEL_FIRST: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
MODEL_CHARS: Final = MODEL_FIRST + "._-[]/@"

#: `PersistenceState`'s fields (B4), in its order, each with the type its JSON value has
#: (`autodev_core.control.persistence`; tests/project/test_names.py holds the class to this table).
PERSISTENCE_FIELDS: Final[dict[str, type]] = {
    "pending_persist": bool, "writes_blocked": bool, "last_accepted_revision": int,
    "accepted_tier": str, "accepted_run_id": str, "last_recoverable_tier": str,
    "queued_revision": int, "queued_run_id": str, "queued_reason": str, "queued_immediate": bool,
}
