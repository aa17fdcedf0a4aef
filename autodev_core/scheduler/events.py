"""What the scheduler hears: small frozen events, validated when built (STYLE: h11's events).

An illegal event cannot exist. The shell (or the simulation) turns what happened — a CLI call
ending, a sleep ending, a user message, a stop — into one of these and feeds it to `step`.
Events never carry raw CLI text: a call's output is summarised by `call_ended` from the
`Classification` detection made of it (A1: a limit is known only when a call reports it).
Every `now` is stored in UTC whatever zone the caller's datetime carries (A6): the waits the
scheduler adds to it are then elapsed time, also across a clock change.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

import attrs

from ..detection.classification import Classification, LimitNotice, UsageReading
from ..engine import Engine
from ..serialization import register_union
from ..times import aware, aware_or_none, utc, utc_or_none

_is_bool = attrs.validators.instance_of(bool)


def _participant_id(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: a participant id is a non-empty string."""
    if not isinstance(value, str):
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name} must be a participant id (str), "
            f"not {type(value).__name__} {value!r}"
        )
    if not value:
        raise ValueError(f"{type(instance).__name__}.{attribute.name} cannot be empty")


def _engine(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: an `Engine`, never its name (`Engine.parse("codex")` makes one)."""
    if not isinstance(value, Engine):
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name} must be an Engine, not "
            f"{type(value).__name__} {value!r} (build one with Engine.parse({str(value)!r}))"
        )


def _limit(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, LimitNotice):
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name} must be a LimitNotice or None, "
            f"not {type(value).__name__}"
        )


def _usage(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, UsageReading):
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name} must be a UsageReading or None, "
            f"not {type(value).__name__}"
        )


def _exit_code(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name} must be an int or None, "
            f"not {type(value).__name__} {value!r}"
        )

#: How a call ended. `post` = it posted (and reported nothing else); `limit` = it reported a
#: usage limit (A2-A4; `posted` tells whether a post came first, A17); `network` = A26/A37;
#: `login` = A32; `exit`, `timeout`, `empty` = the failures of A28 (`empty`: exited normally
#: with no post, A31).
CallKind = Literal["post", "limit", "network", "login", "exit", "timeout", "empty"]
CALL_KINDS: tuple[str, ...] = ("post", "limit", "network", "login", "exit", "timeout", "empty")
_is_call_kind = attrs.validators.in_(CALL_KINDS)


@attrs.frozen
class RunStarted:
    """The run starts (or starts again after a stop): the owed turn begins at `now`."""

    now: datetime = attrs.field(converter=utc, validator=aware)


def _reading_tuple(value: Iterable[UsageReading]) -> tuple[UsageReading, ...]:
    """Readings as a tuple (issue 37: one per window a call reported)."""
    return tuple(value)


@attrs.frozen
class CallEnded:
    """The call the scheduler started has ended at `now` (A38: waits are measured from here).

    Every field is checked when it is built (`now` made UTC first), then how they fit together
    (A2-A4, A17, A26, A28, A31, A32)."""

    now: datetime = attrs.field(converter=utc, validator=aware)
    participant: str = attrs.field(validator=_participant_id)
    engine: Engine = attrs.field(validator=_engine)
    kind: CallKind = attrs.field(validator=_is_call_kind)
    posted: bool = attrs.field(default=False, validator=_is_bool)
    limit: LimitNotice | None = attrs.field(default=None, validator=_limit)
    exit_code: int | None = attrs.field(default=None, validator=_exit_code)
    #: The usage reading the call reported (a healthy call's, never a limit's): docs/limits.md.
    usage: UsageReading | None = attrs.field(default=None, validator=_usage)
    #: Every window the call reported, one reading each (issue 37; docs/limits.md "Readings per
    #: account window"). Empty: `usage` alone is recorded, as before.
    readings: tuple[UsageReading, ...] = attrs.field(default=(), converter=_reading_tuple)

    def __attrs_post_init__(self) -> None:
        kind, limit, engine, usage = self.kind, self.limit, self.engine, self.usage
        for reading in self.readings:
            if not isinstance(reading, UsageReading):
                raise TypeError(f"CallEnded.readings holds UsageReadings, not {reading!r}")
            if reading.provider != engine.provider:
                raise ValueError(
                    f"a {reading.provider} usage reading cannot end a call on {engine}")
            if kind in ("limit", "network", "login"):
                raise ValueError(
                    f"a usage reading comes with a healthy call, not one ending {kind!r}")
        if (kind == "limit") != (limit is not None):
            raise ValueError("CallEnded.limit is set exactly when kind == 'limit'")
        if limit is not None and limit.provider != engine.provider:
            raise ValueError(f"a {limit.provider} notice cannot end a call on {engine}")
        if kind == "post" and not self.posted:
            raise ValueError("CallEnded kind 'post' needs posted=True")
        if self.posted and kind not in ("post", "limit"):
            raise ValueError(f"a call that posted ends as 'post' or 'limit', not {kind!r}")
        if kind == "exit" and not self.exit_code:
            raise ValueError("CallEnded kind 'exit' needs a non-zero exit_code")
        if usage is not None:
            if usage.provider != engine.provider:
                raise ValueError(f"a {usage.provider} usage reading cannot end a call on {engine}")
            if kind in ("limit", "network", "login"):
                raise ValueError(
                    f"a usage reading comes with a healthy call, not one ending {kind!r}"
                )


@attrs.frozen
class CallCancelled:
    """The call in flight was cut short before it ended by itself — the shell stopped it for a
    pause or a stop, or never started it — so it has no outcome. The turn stays owed (A33): the
    next `ResumeRequested` or `RunStarted` starts it again. Report it after the pause or stop
    that caused it (it is refused while the run is `running`). Time spent in the call is charged
    to `max_runtime` (A21); the call still counts as made (A30)."""

    now: datetime = attrs.field(validator=aware)


@attrs.frozen
class Woke:
    """A sleep the scheduler asked for ended (or the shell checked the clock, C2)."""

    now: datetime = attrs.field(converter=utc, validator=aware)


@attrs.frozen
class MessageArrived:
    """A user message reached the thread (A30: it ends a failure wait at once)."""

    now: datetime = attrs.field(converter=utc, validator=aware)


@attrs.frozen
class StopRequested:
    now: datetime = attrs.field(converter=utc, validator=aware)


@attrs.frozen
class PauseRequested:
    now: datetime = attrs.field(converter=utc, validator=aware)


@attrs.frozen
class ResumeRequested:
    """Resume a paused run: the failure streak and empty-turn counts start again (A29, A31)."""

    now: datetime = attrs.field(converter=utc, validator=aware)


@attrs.frozen
class GateRequested:
    """`participant` now has a pending gate: it never hands its turn over (A16, A35)."""

    now: datetime = attrs.field(converter=utc, validator=aware)
    participant: str = attrs.field(validator=_participant_id)


@attrs.frozen
class GateApproved:
    """`participant`'s gate was approved: it gets a turn of its own at once (A22)."""

    now: datetime = attrs.field(converter=utc, validator=aware)
    participant: str = attrs.field(validator=_participant_id)


def _source(_instance: object, _attribute: object, value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("LimitObserved.source names who saw the limit; it cannot be empty")


@attrs.frozen
class LimitObserved:
    """Another run driving the same account saw `engine` limited until `until` (docs/sharing.md).

    `read`: the reset was read from its notice (False: the A6 default stood in for it); `seen`:
    when the other run saw it (None: at `now`); `source`: who saw it, for the log line and
    `autodev status`. It joins the registry by the rule a local notice follows
    (`registry.merge_limit`): routed around (A8-A14), waited for (A18), lifted at its time (A23).
    """

    now: datetime = attrs.field(converter=utc, validator=aware)
    engine: Engine = attrs.field(validator=_engine)
    until: datetime = attrs.field(converter=utc, validator=aware)
    read: bool = attrs.field(default=True, validator=_is_bool)
    seen: datetime | None = attrs.field(
        default=None, converter=utc_or_none, validator=aware_or_none
    )
    source: str = attrs.field(default="another run", validator=_source)


def _usage_source(_instance: object, _attribute: object, value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("UsageObserved.source names who saw the reading; it cannot be empty")


@attrs.frozen
class UsageObserved:
    """Another run driving the same account reported a usage reading of `engine`
    (docs/sharing.md): a healthy call of its own said `reading`, at `seen` (None: at `now`).
    It joins the readings by the rule a local one follows (`registry.merge_usage`: the newest
    wins). A reading decides nothing by itself: it changes the next turn start's choice only when
    `Policy.headroom` is set, and never starts or ends a wait."""

    now: datetime = attrs.field(converter=utc, validator=aware)
    engine: Engine = attrs.field(validator=_engine)
    reading: UsageReading = attrs.field(validator=attrs.validators.instance_of(UsageReading))
    seen: datetime | None = attrs.field(
        default=None, converter=utc_or_none, validator=aware_or_none
    )
    source: str = attrs.field(default="another run", validator=_usage_source)

    @reading.validator
    def _same_provider(self, _attribute: object, value: UsageReading) -> None:
        if value.provider != self.engine.provider:
            raise ValueError(f"a {value.provider} usage reading cannot be of {self.engine}")


@attrs.frozen
class LimitCleared:
    """The operator lifted `engine`'s limit by hand (`autodev limits clear`, docs/cli.md):
    its record leaves the registry at `now`, and, when `engine` names a provider alone, so does
    that provider's outage. A limit or outage wait is decided afresh at once when the registry
    changed (A18, A23: a turn may start on the engine now); a call in flight is not touched
    (A24); any other wait goes on (A19, A28); paused or stopped: nothing is decided."""

    now: datetime = attrs.field(converter=utc, validator=aware)
    engine: Engine = attrs.field(validator=_engine)


Event = (
    RunStarted
    | CallEnded
    | CallCancelled
    | Woke
    | MessageArrived
    | StopRequested
    | PauseRequested
    | ResumeRequested
    | GateRequested
    | GateApproved
    | LimitObserved
    | UsageObserved
    | LimitCleared
)
EVENT_TYPES: tuple[type, ...] = (
    RunStarted,
    CallEnded,
    CallCancelled,
    Woke,
    MessageArrived,
    StopRequested,
    PauseRequested,
    ResumeRequested,
    GateRequested,
    GateApproved,
    LimitObserved,
    UsageObserved,
    LimitCleared,
)
register_union(Event)


def call_ended(
    now: datetime,
    participant: str,
    engine: Engine,
    classification: Classification,
    *,
    posted: bool,
    exit_code: int | None,
    timed_out: bool = False,
) -> CallEnded:
    """Summarise one finished call for the scheduler (used by the shell and the simulation alike).

    A notice wins over everything (A17: a post and a notice are a post then a limit); else a post
    is a working call; else a network error (A26), a login failure (A32, claude only — codex and
    agy have none), a timeout, a non-zero exit, or a normal exit with no post (A28, A31).
    A usage reading in the classification (docs/limits.md) comes along on a healthy call's end.
    """
    kind: CallKind
    limit = classification.limit
    if classification.kind == "limit" and limit is not None:
        kind = "limit"
    elif posted:
        kind = "post"
    elif classification.kind == "network":
        kind = "network"
    elif classification.kind == "login" and engine.provider == "claude":
        kind = "login"
    elif timed_out:
        kind = "timeout"
    elif exit_code not in (None, 0):
        kind = "exit"
    else:
        kind = "empty"
    return CallEnded(
        now=now,
        participant=participant,
        engine=engine,
        kind=kind,
        posted=posted,
        limit=limit if kind == "limit" else None,
        exit_code=exit_code if kind == "exit" else (None if timed_out else exit_code),
        usage=classification.usage if kind not in ("limit", "network", "login") else None,
        readings=classification.readings if kind not in ("limit", "network", "login") else (),
    )
