"""Scenarios for `autodev simulate` as values (SPEC C6, D "Scenario files").

A scenario names a start time and zone, the CLIs installed, a team, and what each engine's calls
answer. These are its frozen values, checked when built; `scenario_yaml.py` reads them from a
scenario file and writes them back, and `scenario.py` offers both modules' names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from types import MappingProxyType
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

from ..detection.classification import MAX_UTILIZATION
from ..engine import PROVIDERS, Engine
from ..participant import Participant
from ..scheduler.policy import DEFAULT_POLICY, Policy
from ..times import aware, aware_or_none

#: A call's outcome comes this long after it starts unless the answer says otherwise (SPEC D).
DEFAULT_CALL_DURATION = timedelta(seconds=60)
#: The key under `calls` that holds the answer used once an engine's own list is used up (SPEC D).
DEFAULT_KEY = "default"
#: Top-level keys of a scenario file (SPEC D); anything else is a typo.
SCENARIO_KEYS: tuple[str, ...] = (
    "start", "timezone", "installed", "max_iterations", "until", "team", "calls", "messages",
    "peers",
    "usage",
    "policy",
)
#: Keys of a team member: the id plus the front-matter keys of a participant file (A10, C5).
MEMBER_KEYS: tuple[str, ...] = ("id", "provider", "model", "failover", "gate")
#: Keys of one report by another run sharing the account (docs/sharing.md, docs/scenarios.md).
PEER_KEYS: tuple[str, ...] = ("at", "engine", "reset", "source")
#: Keys of one period of an account's usage (docs/limits.md, docs/scenarios.md).
USAGE_KEYS: tuple[str, ...] = ("from", "to", "warning", "limit", "window", "reset", "threshold")
#: Who a report comes from when the scenario does not say.
DEFAULT_PEER = "another run"
#: Keys of one call answer (SPEC D).
ANSWER_KEYS: tuple[str, ...] = ("post", "stdout", "stderr", "exit", "timeout", "duration")
REQUIRED_KEYS: tuple[str, ...] = ("start", "timezone", "team")
#: The years a scenario's times may fall in: its waits (resets read up to 400 days ahead, A6) and
#: the 7-day horizon must end inside the calendar `datetime` knows (years 1-9999).
FIRST_YEAR, LAST_YEAR = 2, 9998




def _non_negative(_instance: object, _attribute: object, value: timedelta) -> None:
    if not isinstance(value, timedelta):
        raise TypeError(f"a call's duration must be a timedelta, not {value!r}")
    if value < timedelta(0):
        raise ValueError(f"a call's duration cannot be negative ({value.total_seconds()} s)")


def _typed(kind: type, *, none: bool = False) -> Any:
    """attrs validator: exactly `kind` (a bool is no exit code), or None when `none`."""

    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None and none:
            return
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(
                f"a call answer's {attribute.name!r} must be "
                f"{kind.__name__}{' or None' if none else ''}, not {value!r}"
            )

    return check


@attrs.frozen
class CallAnswer:
    """What one CLI call answers in a simulation (SPEC D).

    A non-empty `post` is a successful post; `stdout`/`stderr` are classified as real output
    would be (A2-A5, A26); `exit` is the exit code; `timeout` means the call timed out (A28);
    the outcome happens `duration` after the call starts.
    """

    post: str | None = attrs.field(default=None, validator=_typed(str, none=True))
    stdout: str = attrs.field(default="", validator=_typed(str))
    stderr: str = attrs.field(default="", validator=_typed(str))
    exit: int = attrs.field(default=0, validator=_typed(int))
    timeout: bool = attrs.field(default=False, validator=_typed(bool))
    duration: timedelta = attrs.field(default=DEFAULT_CALL_DURATION, validator=_non_negative)

    @property
    def posted(self) -> bool:
        """A post is a non-empty text; a missing or empty one is no post (SPEC D)."""
        return bool(self.post)


#: The answer of every call once an engine's list and `default` are used up (SPEC D).
OK_ANSWER = CallAnswer(post="ok")

CallTable = tuple[tuple[str, tuple[CallAnswer, ...]], ...]


@attrs.frozen
class PeerReport:
    """Another run sharing the account reports, at `at`, that `engine` is limited until `reset`
    (read from its notice), or — without `reset` — with no readable reset, so the A6 default
    from `at` stands in for it (docs/sharing.md)."""

    at: datetime = attrs.field(validator=aware)
    engine: Engine
    reset: datetime | None = attrs.field(default=None, validator=aware_or_none)
    source: str = DEFAULT_PEER


def _tuple_of_peers(value: Iterable[PeerReport]) -> tuple[PeerReport, ...]:
    return tuple(value)


def _utilization_or_none(_instance: object, attribute: attrs.Attribute[Any], value: object
                         ) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"UsagePeriod.{attribute.name} must be a number or None, not {value!r}")
    if not 0 <= value <= MAX_UTILIZATION:
        raise ValueError(
            f"UsagePeriod.{attribute.name} must be between 0 and {MAX_UTILIZATION:g}, "
            f"not {value!r}"
        )


@attrs.frozen
class UsagePeriod:
    """How one provider's account is used over time, from `start` (`from:`) until
    `end` (`to:`). A *warning* period (`warning` set: the utilization, e.g. 0.97) gives every
    call on the provider that ends in it, and ends healthy, the usage reading the CLI would
    report (claude's `allowed_warning` event: `window`, the window's `reset`, the provider's
    `threshold`). A *limit* period (`warning` None; `limit: true` in a file) refuses every call
    on the provider that is running or starts in it, with a limit notice until `end`: a call
    already running is refused when the period begins, one that starts in it at once."""

    provider: str = attrs.field(validator=attrs.validators.in_(PROVIDERS))
    start: datetime = attrs.field(validator=aware)
    end: datetime = attrs.field(validator=aware)
    warning: float | None = attrs.field(default=None, validator=_utilization_or_none)
    window: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    reset: datetime | None = attrs.field(default=None, validator=aware_or_none)
    threshold: float | None = attrs.field(default=None, validator=_utilization_or_none)

    def __attrs_post_init__(self) -> None:
        if self.end.astimezone(UTC) <= self.start.astimezone(UTC):
            raise ValueError("UsagePeriod.end ('to') must be after its start ('from')")
        if self.warning is None and (self.window or self.reset is not None
                                     or self.threshold is not None):
            raise ValueError("a limit period lasts until 'to': 'window', 'reset' and "
                             "'threshold' belong to a warning period")

    @property
    def limit(self) -> bool:
        return self.warning is None


def _tuple_of_periods(value: Iterable[UsagePeriod]) -> tuple[UsagePeriod, ...]:
    return tuple(value)


def _check_zone(_instance: object, _attribute: object, value: str) -> None:
    zone_of(value)  # raises ValueError for an unknown zone


def _check_installed(_instance: object, _attribute: object, value: frozenset[str]) -> None:
    unknown = sorted(p for p in value if p not in PROVIDERS)
    if unknown:
        raise ValueError(f"unknown providers in 'installed': {unknown}")


def _check_team(_instance: object, _attribute: object, value: tuple[Participant, ...]) -> None:
    if not value:
        raise ValueError("a scenario's team needs at least one member")
    ids = [member.id for member in value]
    if len(set(ids)) != len(ids):
        raise ValueError(f"team ids must be unique: {ids}")


def _check_calls(_instance: object, _attribute: object, value: CallTable) -> None:
    keys = [key for key, _answers in value]
    if len(set(keys)) != len(keys):
        raise ValueError(f"engine keys in 'calls' must be unique: {keys}")
    for key in keys:
        if str(Engine.parse(key)) != key:
            raise ValueError(f"engine key {key!r} is not written canonically")


def _check_max_iterations(_instance: object, _attribute: object, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or value < 1):
        raise ValueError(f"max_iterations must be at least 1, not {value!r}")


def _frozenset_of_str(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _tuple_of_members(value: Iterable[Participant]) -> tuple[Participant, ...]:
    return tuple(value)


def _call_table(value: Iterable[tuple[str, Iterable[CallAnswer]]]) -> CallTable:
    return tuple((key, tuple(answers)) for key, answers in value)


def _tuple_of_datetimes(value: Iterable[datetime]) -> tuple[datetime, ...]:
    return tuple(value)


@attrs.frozen
class Scenario:
    """A parsed scenario file (SPEC D). Datetimes are aware and expressed in `zone`."""

    start: datetime = attrs.field(validator=aware_or_none)
    timezone: str = attrs.field(validator=_check_zone)
    installed: frozenset[str] = attrs.field(
        default=frozenset(PROVIDERS), converter=_frozenset_of_str, validator=_check_installed
    )
    max_iterations: int | None = attrs.field(default=None, validator=_check_max_iterations)
    until: datetime | None = attrs.field(default=None, validator=aware_or_none)
    team: tuple[Participant, ...] = attrs.field(
        default=(), converter=_tuple_of_members, validator=_check_team
    )
    calls: CallTable = attrs.field(default=(), converter=_call_table, validator=_check_calls)
    default: CallAnswer | None = None
    messages: tuple[datetime, ...] = attrs.field(default=(), converter=_tuple_of_datetimes)
    peers: tuple[PeerReport, ...] = attrs.field(default=(), converter=_tuple_of_peers)
    #: Each provider's usage over time (warning and limit periods), in file order.
    usage: tuple[UsagePeriod, ...] = attrs.field(default=(), converter=_tuple_of_periods)
    policy: Policy = attrs.field(default=DEFAULT_POLICY, validator=attrs.validators.instance_of(
        Policy))

    def __attrs_post_init__(self) -> None:
        # One canonical form, so that a value read back from JSON (fixed offsets) equals the
        # parsed one field by field: every instant is expressed in the scenario's zone.
        zone = self.zone
        for stamp in self.messages:
            aware(self, attrs.fields(Scenario).messages, stamp)
        bounds = (self.start, *self.messages, *((self.until,) if self.until else ()))
        for when in bounds:
            if not FIRST_YEAR <= when.year <= LAST_YEAR:
                raise ValueError(f"Scenario: {out_of_calendar(when)}")
        # Instants are compared and sorted in UTC: two datetimes of one zone object compare by
        # wall clock, which is wrong across a clock change (A6).
        if self.until is not None and self.until.astimezone(UTC) <= self.start.astimezone(UTC):
            raise ValueError("Scenario.until must be after start")
        object.__setattr__(self, "start", self.start.astimezone(zone))
        if self.until is not None:
            object.__setattr__(self, "until", self.until.astimezone(zone))
        ordered = sorted(self.messages, key=lambda stamp: stamp.astimezone(UTC))
        object.__setattr__(self, "messages", tuple(stamp.astimezone(zone) for stamp in ordered))
        object.__setattr__(
            self,
            "peers",
            tuple(
                attrs.evolve(
                    report,
                    at=report.at.astimezone(zone),
                    reset=None if report.reset is None else report.reset.astimezone(zone),
                )
                for report in self.peers
            ),
        )
        object.__setattr__(
            self,
            "usage",
            tuple(
                attrs.evolve(
                    period,
                    start=period.start.astimezone(zone),
                    end=period.end.astimezone(zone),
                    reset=None if period.reset is None else period.reset.astimezone(zone),
                )
                for period in self.usage
            ),
        )
        for provider in PROVIDERS:
            spans = sorted((p.start.astimezone(UTC), p.end.astimezone(UTC))
                           for p in self.usage if p.provider == provider)
            for (_a, end), (start, _b) in pairwise(spans):
                if start < end:
                    raise ValueError(f"Scenario.usage: two periods of {provider} overlap")

    @property
    def zone(self) -> ZoneInfo:
        """The run's zone: log times, codex clock times and `<time>` are read in it (A3, A43)."""
        return zone_of(self.timezone)

    @property
    def calls_by_engine(self) -> Mapping[str, tuple[CallAnswer, ...]]:
        """`calls` as a read-only mapping from engine key (`"claude:sonnet"`) to answers."""
        return MappingProxyType(dict(self.calls))

    def answers_for(self, engine: Engine | str) -> tuple[CallAnswer, ...]:
        """The scripted answers of `engine`'s calls, in order; empty when none are scripted.

        Lists are per engine exactly (A9): `claude:sonnet` does not read `claude`'s list.
        """
        key = str(engine if isinstance(engine, Engine) else Engine.parse(engine))
        return self.calls_by_engine.get(key, ())

    def answer(self, engine: Engine | str, index: int) -> CallAnswer:
        """The answer to `engine`'s call number `index` (0-based): its list, then `default`,
        then `{post: "ok"}` (SPEC D)."""
        answers = self.answers_for(engine)
        if 0 <= index < len(answers):
            return answers[index]
        return self.default if self.default is not None else OK_ANSWER


def zone_of(name: str) -> ZoneInfo:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ValueError(f"unknown time zone {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r} (use an IANA name such as 'Europe/Lisbon')"
        ) from None


def out_of_calendar(value: datetime) -> str:
    return (
        f"{value.replace(tzinfo=None).isoformat()} is out of range: a scenario's times fall in "
        f"the years {FIRST_YEAR}-{LAST_YEAR} (its waits must end before the calendar does)"
    )
