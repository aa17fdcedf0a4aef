"""Scenario files for `autodev simulate` (SPEC C6, D "Scenario files"): a strict parser.

A scenario names a start time and zone, the CLIs installed, a team, and what each engine's calls
answer. This module only reads text into frozen values and renders them back; the simulation
itself is the scheduler's. Every mistake is a `ConfigError` reading
`<source>:<line>: <field path>: <what is wrong>`, e.g.
`scen.yaml:14: team[1].failover[0]: unknown provider 'gpt' (known: claude, codex, agy)`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from types import MappingProxyType
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs
import yaml

from ..detection.classification import MAX_UTILIZATION
from ..engine import PROVIDERS, Engine
from ..errors import ConfigError
from ..participant import Participant
from ..scheduler.policy import DEFAULT_POLICY, Policy, parse_policy, policy_data
from ..serialization import dump_yaml
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
#: Keys of one report by another run sharing the account (issue 14, docs/scenarios.md).
PEER_KEYS: tuple[str, ...] = ("at", "engine", "reset", "source")
#: Keys of one period of an account's usage (issue 25, docs/scenarios.md).
USAGE_KEYS: tuple[str, ...] = ("from", "to", "warning", "limit", "window", "reset", "threshold")
#: Who a report comes from when the scenario does not say.
DEFAULT_PEER = "another run"
#: Keys of one call answer (SPEC D).
ANSWER_KEYS: tuple[str, ...] = ("post", "stdout", "stderr", "exit", "timeout", "duration")
_REQUIRED: tuple[str, ...] = ("start", "timezone", "team")
#: The years a scenario's times may fall in: its waits (resets read up to 400 days ahead, A6) and
#: the 7-day horizon must end inside the calendar `datetime` knows (years 1-9999).
FIRST_YEAR, LAST_YEAR = 2, 9998


# --------------------------------------------------------------------------------------------
# Values


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
    from `at` stands in for it (issue 14)."""

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
    """Issue 25: how one provider's account is used over time, from `start` (`from:`) until
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
    _zone(value)  # raises ValueError for an unknown zone


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
    #: Issue 25: each provider's usage over time (warning and limit periods), in file order.
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
                raise ValueError(f"Scenario: {_out_of_calendar(when)}")
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
        return _zone(self.timezone)

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


def _zone(name: str) -> ZoneInfo:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ValueError(f"unknown time zone {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r} (use an IANA name such as 'Europe/Lisbon')"
        ) from None


# --------------------------------------------------------------------------------------------
# Parsing


class _Where:
    """Where a value was written: its node (for the line) and its field path."""

    __slots__ = ("node", "path")

    def __init__(self, node: yaml.Node, path: str) -> None:
        self.node = node
        self.path = path

    def key(self, name: str, node: yaml.Node) -> _Where:
        return _Where(node, f"{self.path}.{name}" if self.path else name)

    def item(self, index: int, node: yaml.Node) -> _Where:
        return _Where(node, f"{self.path}[{index}]")


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def error(
        self, where: _Where | None, message: str, node: yaml.Node | None = None
    ) -> ConfigError:
        mark_node = node if node is not None else (where.node if where is not None else None)
        line = int(mark_node.start_mark.line) + 1 if mark_node is not None else None
        prefix = f"{where.path}: " if where is not None and where.path else ""
        return ConfigError(prefix + message, source=self.source, line=line)

    # -- shapes ---------------------------------------------------------------------------

    def scalar(self, where: _Where) -> Any:
        node = where.node
        if isinstance(node, yaml.MappingNode):
            raise self.error(where, "expected a single value, not a mapping")
        if isinstance(node, yaml.SequenceNode):
            raise self.error(where, "expected a single value, not a list")
        try:
            return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise self.error(where, f"cannot read this value: {_problem(exc)}") from None
        except (ValueError, OverflowError) as exc:
            # e.g. the timestamp 2026-13-01T09:00:00: YAML matches it, datetime refuses it.
            raise self.error(where, f"cannot read {node.value!r}: {exc}") from None

    def mapping(
        self,
        where: _Where,
        known: tuple[str, ...],
        what: str,
        hint: Mapping[str, str] | None = None,
    ) -> dict[str, _Where]:
        node = where.node
        if not isinstance(node, yaml.MappingNode):
            raise self.error(where, f"{what} must be a mapping of keys to values")
        found: dict[str, _Where] = {}
        for key_node, value_node in node.value:
            key = self.scalar(_Where(key_node, where.path))
            if not isinstance(key, str):
                raise self.error(where, f"keys must be words, not {key!r}", node=key_node)
            if key not in known:
                message = f"unknown key {key!r}"
                extra = (hint or {}).get(key)
                close = difflib.get_close_matches(key, known, n=1)
                if extra:
                    message += f" ({extra})"
                elif close:
                    message += f" (did you mean {close[0]!r}?)"
                message += f"; known keys: {', '.join(known)}"
                raise self.error(where, message, node=key_node)
            if key in found:
                raise self.error(where.key(key, key_node), "is written twice", node=key_node)
            found[key] = where.key(key, value_node)
        return found

    def sequence(self, where: _Where, what: str) -> list[_Where]:
        node = where.node
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(where, f"{what} must be a list")
        return [where.item(index, item) for index, item in enumerate(node.value)]

    # -- scalars --------------------------------------------------------------------------

    def text(self, where: _Where, *, allow_none: bool = False) -> str | None:
        value = self.scalar(where)
        if value is None and allow_none:
            return None
        if not isinstance(value, str):
            raise self.error(where, f"expected text, not {_show(value)}")
        return value

    def integer(self, where: _Where) -> int:
        value = self.scalar(where)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(where, f"expected a whole number, not {_show(value)}")
        return value

    def boolean(self, where: _Where) -> bool:
        value = self.scalar(where)
        if not isinstance(value, bool):
            raise self.error(where, f"expected true or false, not {_show(value)}")
        return value

    def seconds(self, where: _Where) -> timedelta:
        value = self.scalar(where)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(where, f"expected a number of seconds, not {_show(value)}")
        if not math.isfinite(value):
            raise self.error(where, f"expected a finite number of seconds, not {value!r}")
        if value < 0:
            raise self.error(where, f"a duration cannot be negative ({value!r} s)")
        try:
            return timedelta(seconds=value)
        except OverflowError:
            raise self.error(where, f"duration {value!r} s is too large") from None

    def local_time(self, where: _Where, zone: ZoneInfo, zone_name: str) -> datetime:
        """A naive local date-time (YAML timestamp or text) read as wall-clock time in `zone`."""
        value = self.scalar(where)
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value.strip())
            except ValueError:
                raise self.error(
                    where, f"expected a local date-time such as 2026-12-01T09:00:00, not {value!r}"
                ) from None
        if isinstance(value, datetime):
            if not FIRST_YEAR <= value.year <= LAST_YEAR:
                raise self.error(where, _out_of_calendar(value))
            if value.tzinfo is not None:
                raise self.error(
                    where,
                    f"write a local time in {zone_name} without a UTC offset or 'Z' "
                    f"(got {value.isoformat()})",
                )
            try:
                return _localize(value, zone, zone_name)
            except ValueError as exc:
                raise self.error(where, str(exc)) from None
        if isinstance(value, date):
            raise self.error(where, f"{value.isoformat()} is a date; write a date and time")
        raise self.error(
            where, f"expected a local date-time such as 2026-12-01T09:00:00, not {_show(value)}"
        )

    # -- parts ----------------------------------------------------------------------------

    def provider(self, where: _Where) -> str:
        value = self.scalar(where)
        if not isinstance(value, str) or value.strip() not in PROVIDERS:
            raise self.error(where, f"unknown provider {value!r} (known: {', '.join(PROVIDERS)})")
        return value.strip()

    def engine(self, where: _Where, *, value: Any = None) -> Engine:
        raw = self.scalar(where) if value is None else value
        if not isinstance(raw, str):
            raise self.error(where, f"an engine is written 'provider[:model]', not {_show(raw)}")
        try:
            return Engine.parse(raw)
        except ValueError as exc:
            reason = str(exc)
            if reason.startswith("unknown provider"):
                raise self.error(where, reason) from None
            raise self.error(where, f"bad engine {raw!r}: {reason}") from None

    def member(self, where: _Where) -> tuple[Participant, dict[str, _Where]]:
        fields = self.mapping(where, MEMBER_KEYS, "a team member")
        for required in ("id", "provider"):
            if required not in fields:
                raise self.error(where, f"missing required key {required!r}")
        id_where = fields["id"]
        member_id = self.text(id_where)
        assert member_id is not None
        id_field = attrs.fields(Participant).id
        try:
            if id_field.validator is not None:
                id_field.validator(None, id_field, member_id)
        except ValueError as exc:
            raise self.error(id_where, str(exc)) from None
        provider = self.provider(fields["provider"])
        model: str | None = None
        if "model" in fields:
            raw_model = self.scalar(fields["model"])
            if raw_model is not None:
                if not isinstance(raw_model, str) or not raw_model.strip():
                    raise self.error(
                        fields["model"], f"'model' must be a non-empty string, not {raw_model!r}"
                    )
                model = raw_model.strip()
        gate = self.boolean(fields["gate"]) if "gate" in fields else False
        chain: list[Engine] = []
        if "failover" in fields and self._present(fields["failover"]):
            for entry in self.sequence(fields["failover"], "'failover'"):
                chain.append(self.engine(entry))
        return (
            Participant(
                id=member_id, provider=provider, model=model, failover=tuple(chain), gate=gate
            ),
            fields,
        )

    def answer(self, where: _Where) -> CallAnswer:
        fields = self.mapping(where, ANSWER_KEYS, "a call answer")
        post = self.text(fields["post"], allow_none=True) if "post" in fields else None
        stdout = self.text(fields["stdout"]) if "stdout" in fields else ""
        stderr = self.text(fields["stderr"]) if "stderr" in fields else ""
        exit_code = self.integer(fields["exit"]) if "exit" in fields else 0
        timed_out = self.boolean(fields["timeout"]) if "timeout" in fields else False
        duration = (
            self.seconds(fields["duration"]) if "duration" in fields else DEFAULT_CALL_DURATION
        )
        if timed_out and exit_code != 0:
            raise self.error(
                fields["exit"], "a call that timed out is killed and has no exit code of its own"
            )
        if timed_out and post:
            raise self.error(fields["post"], "a call that timed out posted nothing; drop 'post'")
        assert stdout is not None and stderr is not None
        return CallAnswer(
            post=post, stdout=stdout, stderr=stderr, exit=exit_code, timeout=timed_out,
            duration=duration,
        )

    def peer(self, where: _Where, zone: ZoneInfo, zone_name: str) -> PeerReport:
        fields = self.mapping(where, PEER_KEYS, "a report by another run")
        for required in ("at", "engine"):
            if required not in fields:
                raise self.error(where, f"missing required key {required!r}")
        stamp = self.local_time(fields["at"], zone, zone_name)
        reset: datetime | None = None
        if "reset" in fields and self._present(fields["reset"]):
            reset = self.local_time(fields["reset"], zone, zone_name)
            if reset.astimezone(UTC) <= stamp.astimezone(UTC):
                raise self.error(fields["reset"], "a reported reset comes after 'at'")
        source = DEFAULT_PEER
        if "source" in fields:
            text = self.text(fields["source"])
            if text is None or not text.strip():
                raise self.error(fields["source"], "names who saw the limit; it cannot be empty")
            source = text.strip()
        return PeerReport(at=stamp, engine=self.engine(fields["engine"]), reset=reset,
                          source=source)

    def period(self, provider: str, where: _Where, zone: ZoneInfo, zone_name: str
               ) -> UsagePeriod:
        fields = self.mapping(where, USAGE_KEYS, "a period of the account's usage")
        for required in ("from", "to"):
            if required not in fields:
                raise self.error(where, f"missing required key {required!r}")
        start = self.local_time(fields["from"], zone, zone_name)
        end = self.local_time(fields["to"], zone, zone_name)
        if end.astimezone(UTC) <= start.astimezone(UTC):
            raise self.error(fields["to"], "must be after 'from'")
        warned = "warning" in fields and self._present(fields["warning"])
        limited = "limit" in fields and self.boolean(fields["limit"])
        if warned == limited:
            raise self.error(where, "a period has either 'warning: <utilization>' (e.g. 0.97) "
                             "or 'limit: true'")
        if limited:
            for key in ("window", "reset", "threshold"):
                if key in fields:
                    raise self.error(fields[key], "belongs to a warning period; a limit "
                                     "period lasts until 'to'")
            return UsagePeriod(provider=provider, start=start, end=end)
        warning = self.fraction(fields["warning"])
        window = ""
        if "window" in fields and self._present(fields["window"]):
            window = self.text(fields["window"]) or ""
        reset: datetime | None = None
        if "reset" in fields and self._present(fields["reset"]):
            reset = self.local_time(fields["reset"], zone, zone_name)
        threshold = None
        if "threshold" in fields and self._present(fields["threshold"]):
            threshold = self.fraction(fields["threshold"])
        return UsagePeriod(provider=provider, start=start, end=end, warning=warning,
                           window=window, reset=reset, threshold=threshold)

    def fraction(self, where: _Where) -> float:
        value = self.scalar(where)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                0 <= value <= MAX_UTILIZATION):
            raise self.error(where, f"a utilization is a fraction such as 0.97 (0 to "
                             f"{MAX_UTILIZATION:g}), not {_show(value)}")
        return float(value)

    def _present(self, where: _Where) -> bool:
        node = where.node
        return not (isinstance(node, yaml.ScalarNode) and self.scalar(where) is None)


def _show(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{value!r} (true/false)"
    if isinstance(value, datetime):
        return f"the date-time {value.isoformat()}"
    if isinstance(value, date):
        return f"the date {value.isoformat()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value!r}"
    return repr(value)


def _problem(exc: yaml.YAMLError) -> str:
    return str(getattr(exc, "problem", None) or exc).strip()


def _out_of_calendar(value: datetime) -> str:
    return (
        f"{value.replace(tzinfo=None).isoformat()} is out of range: a scenario's times fall in "
        f"the years {FIRST_YEAR}-{LAST_YEAR} (its waits must end before the calendar does)"
    )


def _localize(naive: datetime, zone: ZoneInfo, zone_name: str) -> datetime:
    """`naive` as wall-clock time in `zone`; a time skipped or repeated by a clock change is
    refused, since the file cannot say which instant it means."""
    first = naive.replace(tzinfo=zone, fold=0)
    second = naive.replace(tzinfo=zone, fold=1)
    back = first.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
    if back != naive:
        raise ValueError(
            f"{naive.isoformat()} does not exist in {zone_name} (the clocks skip it)"
        )
    if first.utcoffset() != second.utcoffset():
        raise ValueError(
            f"{naive.isoformat()} happens twice in {zone_name} (the clocks go back); "
            "pick a time that happens once"
        )
    return first


def parse_scenario(text: str, *, source: str = "<string>") -> Scenario:
    """Read a scenario file (SPEC D). Raises ConfigError naming source, line and field."""
    reader = _Reader(source)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = int(mark.line) + 1 if mark is not None else None
        raise ConfigError(f"invalid YAML: {_problem(exc)}", source=source, line=line) from None
    if root is None or (isinstance(root, yaml.ScalarNode) and root.value == ""):
        raise ConfigError(
            f"the scenario is empty: {', '.join(repr(k) for k in _REQUIRED)} are required",
            source=source,
            line=1,
        )
    top = _Where(root, "")
    fields = reader.mapping(
        top, SCENARIO_KEYS, "a scenario",
        hint={DEFAULT_KEY: "the default answer goes under 'calls'"},
    )
    for required in _REQUIRED:
        if required not in fields:
            raise reader.error(top, f"missing required key {required!r}")

    zone_name = reader.text(fields["timezone"])
    assert zone_name is not None
    try:
        zone = _zone(zone_name)
    except ValueError as exc:
        raise reader.error(fields["timezone"], str(exc)) from None

    start = reader.local_time(fields["start"], zone, zone_name)
    until: datetime | None = None
    if "until" in fields and reader._present(fields["until"]):
        until = reader.local_time(fields["until"], zone, zone_name)
        if until.astimezone(UTC) <= start.astimezone(UTC):
            raise reader.error(fields["until"], "must be after 'start'")

    installed = frozenset(PROVIDERS)
    if "installed" in fields:
        seen: list[str] = []
        for entry in reader.sequence(fields["installed"], "'installed'"):
            provider = reader.provider(entry)
            if provider in seen:
                raise reader.error(entry, f"{provider!r} is listed twice")
            seen.append(provider)
        installed = frozenset(seen)

    max_iterations: int | None = None
    if "max_iterations" in fields and reader._present(fields["max_iterations"]):
        max_iterations = reader.integer(fields["max_iterations"])
        if max_iterations < 1:
            raise reader.error(
                fields["max_iterations"], f"must be at least 1, not {max_iterations}"
            )

    team: list[Participant] = []
    members = reader.sequence(fields["team"], "'team'")
    if not members:
        raise reader.error(fields["team"], "the team needs at least one member")
    for where in members:
        member, member_fields = reader.member(where)
        if any(other.id == member.id for other in team):
            raise reader.error(member_fields["id"], f"duplicate id {member.id!r}")
        if not any(entry.provider in installed for entry in member.entries):
            # A12 skips an entry whose CLI is missing, the primary included; a member with no
            # installed entry at all could never take a turn.
            raise reader.error(
                member_fields["provider"],
                f"no CLI of {', '.join(str(e) for e in member.entries)} is installed "
                f"(installed: {', '.join(p for p in PROVIDERS if p in installed) or 'none'})",
            )
        team.append(member)

    calls: list[tuple[str, tuple[CallAnswer, ...]]] = []
    default: CallAnswer | None = None
    if "calls" in fields and reader._present(fields["calls"]):
        calls_where = fields["calls"]
        node = calls_where.node
        if not isinstance(node, yaml.MappingNode):
            raise reader.error(calls_where, "'calls' must map engines to lists of answers")
        for key_node, value_node in node.value:
            raw_key = reader.scalar(_Where(key_node, "calls"))
            key_where = _Where(value_node, f"calls.{raw_key}")
            if raw_key == DEFAULT_KEY:
                if default is not None:
                    raise reader.error(key_where, "is written twice", node=key_node)
                if isinstance(value_node, yaml.SequenceNode):
                    raise reader.error(
                        key_where, "'default' is a single answer such as {post: ok}, not a list"
                    )
                default = reader.answer(key_where)
                continue
            engine = reader.engine(_Where(key_node, f"calls.{raw_key}"), value=raw_key)
            name = str(engine)
            if any(existing == name for existing, _answers in calls):
                raise reader.error(key_where, f"engine {name!r} is written twice", node=key_node)
            if isinstance(value_node, yaml.MappingNode):
                raise reader.error(
                    key_where,
                    "an engine's answers are a list, e.g. [{post: ok}] (one answer per call)",
                )
            answers = tuple(
                reader.answer(item) for item in reader.sequence(key_where, f"calls.{name}")
            )
            calls.append((name, answers))

    messages: list[datetime] = []
    if "messages" in fields and reader._present(fields["messages"]):
        for where in reader.sequence(fields["messages"], "'messages'"):
            stamp = reader.local_time(where, zone, zone_name)
            if stamp.astimezone(UTC) < start.astimezone(UTC):
                raise reader.error(where, "a message cannot arrive before 'start'")
            if until is not None and stamp.astimezone(UTC) > until.astimezone(UTC):
                raise reader.error(where, "a message after 'until' would never arrive")
            messages.append(stamp)

    peers: list[PeerReport] = []
    if "peers" in fields and reader._present(fields["peers"]):
        for where in reader.sequence(fields["peers"], "'peers'"):
            report = reader.peer(where, zone, zone_name)
            if report.at.astimezone(UTC) < start.astimezone(UTC):
                raise reader.error(where, "a report cannot arrive before 'start'")
            if until is not None and report.at.astimezone(UTC) > until.astimezone(UTC):
                raise reader.error(where, "a report after 'until' would never arrive")
            peers.append(report)
    usage: list[UsagePeriod] = []
    if "usage" in fields and reader._present(fields["usage"]):
        where = fields["usage"]
        node = where.node
        if not isinstance(node, yaml.MappingNode):
            raise reader.error(where, "maps providers to lists of periods, e.g. claude: "
                               "[{from: ..., to: ..., warning: 0.97}]")
        for key_node, value_node in node.value:
            name = reader.scalar(_Where(key_node, "usage"))
            key_where = _Where(value_node, f"usage.{name}")
            if name not in PROVIDERS:
                raise reader.error(key_where, f"unknown provider {name!r} (known: "
                                   f"{', '.join(PROVIDERS)})", node=key_node)
            mine: list[UsagePeriod] = []
            for item in reader.sequence(key_where, f"usage.{name}"):
                period = reader.period(str(name), item, zone, zone_name)
                for other in mine:
                    if (period.start.astimezone(UTC) < other.end.astimezone(UTC)
                            and other.start.astimezone(UTC) < period.end.astimezone(UTC)):
                        raise reader.error(item, "overlaps an earlier period of "
                                           f"{name}; periods of one account follow each other")
                mine.append(period)
            usage.extend(mine)
    policy = DEFAULT_POLICY
    if "policy" in fields and reader._present(fields["policy"]):
        where = fields["policy"]
        try:
            policy = parse_policy(
                yaml.constructor.SafeConstructor().construct_object(where.node, deep=True)
            )
        except ValueError as exc:
            raise reader.error(None, str(exc), node=where.node) from None

    return Scenario(
        start=start,
        timezone=zone_name,
        installed=installed,
        max_iterations=max_iterations,
        until=until,
        team=tuple(team),
        calls=tuple(calls),
        default=default,
        messages=tuple(messages),
        peers=tuple(peers),
        usage=tuple(usage),
        policy=policy,
    )


# --------------------------------------------------------------------------------------------
# Rendering


def _local(stamp: datetime, zone: ZoneInfo) -> str:
    return stamp.astimezone(zone).replace(tzinfo=None).isoformat()


def _seconds(duration: timedelta) -> int | float:
    seconds = duration.total_seconds()
    return int(seconds) if seconds == int(seconds) else seconds


def _answer_data(answer: CallAnswer) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if answer.post is not None:
        data["post"] = answer.post
    if answer.stdout:
        data["stdout"] = answer.stdout
    if answer.stderr:
        data["stderr"] = answer.stderr
    if answer.exit != 0:
        data["exit"] = answer.exit
    if answer.timeout:
        data["timeout"] = True
    if answer.duration != DEFAULT_CALL_DURATION:
        data["duration"] = _seconds(answer.duration)
    return data


def _member_data(member: Participant) -> dict[str, Any]:
    data: dict[str, Any] = {"id": member.id, "provider": member.provider}
    if member.model is not None:
        data["model"] = member.model
    if member.failover:
        data["failover"] = [str(entry) for entry in member.failover]
    if member.gate:
        data["gate"] = True
    return data


def _peer_data(report: PeerReport, zone: ZoneInfo) -> dict[str, Any]:
    data: dict[str, Any] = {"at": _local(report.at, zone), "engine": str(report.engine)}
    if report.reset is not None:
        data["reset"] = _local(report.reset, zone)
    if report.source != DEFAULT_PEER:
        data["source"] = report.source
    return data


def _period_data(period: UsagePeriod, zone: ZoneInfo) -> dict[str, Any]:
    data: dict[str, Any] = {"from": _local(period.start, zone), "to": _local(period.end, zone)}
    if period.warning is None:
        data["limit"] = True
        return data
    data["warning"] = period.warning
    if period.window:
        data["window"] = period.window
    if period.reset is not None:
        data["reset"] = _local(period.reset, zone)
    if period.threshold is not None:
        data["threshold"] = period.threshold
    return data


def render_scenario(scenario: Scenario) -> str:
    """The scenario file text for `scenario`: `parse_scenario(render_scenario(s)) == s`.

    A member's `prompt` is not part of a scenario file and is not written.
    """
    zone = scenario.zone
    data: dict[str, Any] = {
        "start": _local(scenario.start, zone),
        "timezone": scenario.timezone,
        "installed": [p for p in PROVIDERS if p in scenario.installed],
    }
    if scenario.max_iterations is not None:
        data["max_iterations"] = scenario.max_iterations
    if scenario.until is not None:
        data["until"] = _local(scenario.until, zone)
    data["team"] = [_member_data(member) for member in scenario.team]
    calls: dict[str, Any] = {
        key: [_answer_data(answer) for answer in answers] for key, answers in scenario.calls
    }
    if scenario.default is not None:
        calls[DEFAULT_KEY] = _answer_data(scenario.default)
    if calls:
        data["calls"] = calls
    if scenario.messages:
        data["messages"] = [_local(stamp, zone) for stamp in scenario.messages]
    if scenario.peers:
        data["peers"] = [_peer_data(report, zone) for report in scenario.peers]
    if scenario.usage:
        usage: dict[str, Any] = {}
        for period in scenario.usage:
            usage.setdefault(period.provider, []).append(_period_data(period, zone))
        data["usage"] = usage
    if scenario.policy != DEFAULT_POLICY:
        data["policy"] = policy_data(scenario.policy)
    return dump_yaml(data, width=1_000_000)

