"""What the scheduler asks the shell to do: frozen effects (STYLE: aioquic's timers, h11's nouns).

The shell carries out every effect; the simulation does the same in virtual time. Nothing here
decides anything.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs

from ..engine import Engine
from ..serialization import register_union
from ..times import aware, aware_or_none

#: A42: the only statuses a run has.
Status = Literal["running", "rate_limited", "unreachable", "backing_off", "paused", "stopped"]
STATUSES: tuple[str, ...] = (
    "running", "rate_limited", "unreachable", "backing_off", "paused", "stopped",
)
#: B18: a turn is fresh (new input since the participant's last turn) or a no-new-input retry.
TurnKind = Literal["fresh", "no-new-input"]
TURN_KINDS: tuple[str, ...] = ("fresh", "no-new-input")
#: The statuses in which the run sleeps until a deadline.
WAIT_STATUSES: tuple[str, ...] = ("rate_limited", "unreachable", "backing_off")


@attrs.frozen(weakref_slot=False)  # no weak references: see _build.py
class StartCall:
    """Run `participant`'s CLI on `engine` (with `model`, or the CLI's default when None).

    `turn_owner` is the participant the turn is owed to (A33): a colleague taking the turn (A15)
    runs for it. Report the end with a `CallEnded` event.
    """

    at: datetime = attrs.field(validator=aware)
    participant: str
    engine: Engine
    model: str | None
    turn_kind: TurnKind = attrs.field(validator=attrs.validators.in_(TURN_KINDS))
    turn_owner: str


@attrs.frozen(weakref_slot=False)  # no weak references: see _build.py
class Sleep:
    """Sleep until `until` (in slices, C2), then send `Woke`. `wakes_on_message`: a user message
    ends this sleep (A30, failure waits only); stop and pause always do (A19)."""

    until: datetime = attrs.field(validator=aware)
    status: Status = attrs.field(validator=attrs.validators.in_(WAIT_STATUSES))
    wakes_on_message: bool


#: What a `Log` line says, for programs (the `message` is for people). One kind per line of
#: SPEC A; `note` is a line with no structured fields (none of the scheduler's); the three
#: `*near-limit` kinds are issue 25's (`Policy.headroom`, off by default).
LogKind = Literal[
    "limit", "posted", "outage", "reachable",
    "hop-limited", "hop-unreachable", "handover-limited", "handover-unreachable",
    "lifted", "wait-limited", "wait-unreachable", "wait-own",
    "failed", "gave-up", "empty-turns", "not-logged-in",
    "max-iterations", "max-runtime", "note",
    "near-limit", "hop-near-limit", "handover-near-limit",
]
LOG_KINDS: tuple[str, ...] = (
    "limit", "posted", "outage", "reachable",
    "hop-limited", "hop-unreachable", "handover-limited", "handover-unreachable",
    "lifted", "wait-limited", "wait-unreachable", "wait-own",
    "failed", "gave-up", "empty-turns", "not-logged-in",
    "max-iterations", "max-runtime", "note",
    "near-limit", "hop-near-limit", "handover-near-limit",
)


@attrs.frozen(weakref_slot=False)  # no weak references: see _build.py
class Log:
    """One log line, worded as SPEC A fixes it, stamped with the instant it happened.

    `message` is the SPEC's text, for people; `kind` and the fields below say the same for
    programs (None when a line has no such field): `participant` whose turn or call it is,
    `engine` the engine it ran on or that is limited, `provider` the provider out or back,
    `target` the engine a hop goes to, `colleague` who takes a handed-over turn, `until` the
    instant the line names (a reset, a retry, the next attempt, the end of a wait), `count` a
    number it names (failures in a row, an outage's attempts, empty turns, calls made), and
    `failure` what failed (A28's `<what failed>`). docs/api.md lists the fields of each kind.
    """

    at: datetime = attrs.field(validator=aware)
    message: str
    kind: LogKind = attrs.field(default="note", validator=attrs.validators.in_(LOG_KINDS))
    participant: str | None = None
    engine: Engine | None = None
    provider: str | None = None
    target: Engine | None = None
    colleague: str | None = None
    until: datetime | None = attrs.field(default=None, validator=aware_or_none)
    count: int | None = None
    failure: str | None = None


#: The structured fields of a `Log`, in the order programs get them (`log_fields`).
LOG_FIELDS: tuple[str, ...] = (
    "participant", "engine", "provider", "target", "colleague", "until", "count", "failure",
)


def log_fields(log: Log) -> dict[str, str | int]:
    """`log` as a compact dict for programs (C7): `at` (ISO 8601), `kind`, `message`, then each
    of `LOG_FIELDS` that the line has, and no null fields; an engine is written `provider[:model]`
    (A9), an instant in ISO 8601. `autodev run --json` writes these (as `event`, not `kind`)."""
    record: dict[str, str | int] = {"at": log.at.isoformat(), "kind": log.kind,
                                    "message": log.message}
    for name in LOG_FIELDS:
        value = getattr(log, name)
        if value is None:
            continue
        if isinstance(value, datetime):
            record[name] = value.isoformat()
        elif isinstance(value, (int, str)):
            record[name] = value
        else:
            record[name] = str(value)
    return record


@attrs.frozen(weakref_slot=False)  # no weak references: see _build.py
class StatusChanged:
    """The run's status became `status` (A42)."""

    at: datetime = attrs.field(validator=aware)
    status: Status = attrs.field(validator=attrs.validators.in_(STATUSES))


Effect = StartCall | Sleep | Log | StatusChanged
EFFECT_TYPES: tuple[type, ...] = (StartCall, Sleep, Log, StatusChanged)
register_union(Effect)
