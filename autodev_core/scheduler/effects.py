"""What the scheduler asks the shell to do: frozen effects (STYLE: aioquic's timers, h11's nouns).

The shell carries out every effect; the simulation does the same in virtual time. Nothing here
decides anything.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from ..engine import Engine

# The statuses, turn kinds and log kinds are stated once, in `names`; the scheduler
# offers them here too, where they were.
from ..names import LOG_KINDS as LOG_KINDS
from ..names import STATUSES as STATUSES
from ..names import TURN_KINDS as TURN_KINDS
from ..names import WAIT_STATUSES as WAIT_STATUSES
from ..names import LogKind as LogKind
from ..names import Status as Status
from ..names import TurnKind as TurnKind
from ..serialization import register_union
from ..times import aware, aware_or_none


@attrs.frozen
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


@attrs.frozen
class Sleep:
    """Sleep until `until` (in slices, C2), then send `Woke`. `wakes_on_message`: a user message
    ends this sleep (A30, failure waits only); stop and pause always do (A19)."""

    until: datetime = attrs.field(validator=aware)
    status: Status = attrs.field(validator=attrs.validators.in_(WAIT_STATUSES))
    wakes_on_message: bool


@attrs.frozen
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


@attrs.frozen
class StatusChanged:
    """The run's status became `status` (A42)."""

    at: datetime = attrs.field(validator=aware)
    status: Status = attrs.field(validator=attrs.validators.in_(STATUSES))


Effect = StartCall | Sleep | Log | StatusChanged
EFFECT_TYPES: tuple[type, ...] = (StartCall, Sleep, Log, StatusChanged)
register_union(Effect)
