"""Scenario files for `autodev simulate` (SPEC C6, D "Scenario files"): a strict reader, and
the writer of the same text.

This module only reads text into the frozen values of `scenario_values.py` and renders them
back; the simulation itself is the scheduler's. The YAML is composed by `yaml_lines` (the one
reader of human-written YAML), so each value keeps its line. Every mistake is a `ConfigError`
reading `<source>:<line>: <field path>: <what is wrong>`, e.g.
`scen.yaml:14: team[1].failover[0]: unknown provider 'gpt' (known: claude, codex, agy)`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import attrs
import yaml

from ..detection.classification import MAX_UTILIZATION
from ..engine import PROVIDERS, Engine
from ..errors import ConfigError
from ..participant import Participant
from ..scheduler.policy import DEFAULT_POLICY, Policy, parse_policy, policy_data
from ..serialization import dump_yaml
from ..yaml_lines import compose_yaml, construct_yaml, yaml_problem
from . import scenario_values as values
from .scenario_values import (
    CallAnswer,
    PeerReport,
    Scenario,
    UsagePeriod,
    out_of_calendar,
    zone_of,
)

# --------------------------------------------------------------------------------------------
# Reading



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
            return construct_yaml(node)
        except yaml.YAMLError as exc:
            raise self.error(where, f"cannot read this value: {yaml_problem(exc)}") from None
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
            if not values.FIRST_YEAR <= value.year <= values.LAST_YEAR:
                raise self.error(where, out_of_calendar(value))
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
        fields = self.mapping(where, values.MEMBER_KEYS, "a team member")
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
        fields = self.mapping(where, values.ANSWER_KEYS, "a call answer")
        post = self.text(fields["post"], allow_none=True) if "post" in fields else None
        stdout = self.text(fields["stdout"]) if "stdout" in fields else ""
        stderr = self.text(fields["stderr"]) if "stderr" in fields else ""
        exit_code = self.integer(fields["exit"]) if "exit" in fields else 0
        timed_out = self.boolean(fields["timeout"]) if "timeout" in fields else False
        duration = values.DEFAULT_CALL_DURATION
        if "duration" in fields:
            duration = self.seconds(fields["duration"])
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
        fields = self.mapping(where, values.PEER_KEYS, "a report by another run")
        for required in ("at", "engine"):
            if required not in fields:
                raise self.error(where, f"missing required key {required!r}")
        stamp = self.local_time(fields["at"], zone, zone_name)
        reset: datetime | None = None
        if "reset" in fields and self._present(fields["reset"]):
            reset = self.local_time(fields["reset"], zone, zone_name)
            if reset.astimezone(UTC) <= stamp.astimezone(UTC):
                raise self.error(fields["reset"], "a reported reset comes after 'at'")
        source = values.DEFAULT_PEER
        if "source" in fields:
            text = self.text(fields["source"])
            if text is None or not text.strip():
                raise self.error(fields["source"], "names who saw the limit; it cannot be empty")
            source = text.strip()
        return PeerReport(at=stamp, engine=self.engine(fields["engine"]), reset=reset,
                          source=source)

    def period(self, provider: str, where: _Where, zone: ZoneInfo, zone_name: str
               ) -> UsagePeriod:
        fields = self.mapping(where, values.USAGE_KEYS, "a period of the account's usage")
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
    root = compose_yaml(text, source=source)
    if root is None or (isinstance(root, yaml.ScalarNode) and root.value == ""):
        raise ConfigError(
            f"the scenario is empty: {', '.join(map(repr, values.REQUIRED_KEYS))} are required",
            source=source,
            line=1,
        )
    top = _Where(root, "")
    fields = reader.mapping(
        top, values.SCENARIO_KEYS, "a scenario",
        hint={values.DEFAULT_KEY: "the default answer goes under 'calls'"},
    )
    for required in values.REQUIRED_KEYS:
        if required not in fields:
            raise reader.error(top, f"missing required key {required!r}")
    zone_name = reader.text(fields["timezone"])
    assert zone_name is not None
    try:
        zone = zone_of(zone_name)
    except ValueError as exc:
        raise reader.error(fields["timezone"], str(exc)) from None
    # Read in the order the keys are documented, so a file with several mistakes is told of
    # the same one first, whatever its keys' order.
    clock = _Span(reader, zone, zone_name)
    clock.read(fields)
    installed = _installed(reader, fields)
    max_iterations = _max_iterations(reader, fields)
    team = _team(reader, fields["team"], installed)
    calls, default = _calls(reader, fields)
    messages = clock.messages(fields)
    peers = clock.peers(fields)
    usage = clock.usage(fields)
    return Scenario(
        start=clock.start, timezone=zone_name, installed=installed,
        max_iterations=max_iterations, until=clock.until, team=team, calls=calls,
        default=default, messages=messages, peers=peers, usage=usage,
        policy=_policy(reader, fields),
    )


def _given(reader: _Reader, fields: Mapping[str, _Where], key: str) -> _Where | None:
    """The value written under `key`, or None when the key is absent or null."""
    where = fields.get(key)
    return where if where is not None and reader._present(where) else None


def _installed(reader: _Reader, fields: Mapping[str, _Where]) -> frozenset[str]:
    if "installed" not in fields:
        return frozenset(PROVIDERS)
    seen: list[str] = []
    for entry in reader.sequence(fields["installed"], "'installed'"):
        provider = reader.provider(entry)
        if provider in seen:
            raise reader.error(entry, f"{provider!r} is listed twice")
        seen.append(provider)
    return frozenset(seen)


def _max_iterations(reader: _Reader, fields: Mapping[str, _Where]) -> int | None:
    where = _given(reader, fields, "max_iterations")
    if where is None:
        return None
    max_iterations = reader.integer(where)
    if max_iterations < 1:
        raise reader.error(where, f"must be at least 1, not {max_iterations}")
    return max_iterations


def _team(reader: _Reader, where: _Where, installed: frozenset[str]) -> tuple[Participant, ...]:
    team: list[Participant] = []
    members = reader.sequence(where, "'team'")
    if not members:
        raise reader.error(where, "the team needs at least one member")
    for item in members:
        member, member_fields = reader.member(item)
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
    return tuple(team)


def _calls(reader: _Reader, fields: Mapping[str, _Where]
           ) -> tuple[tuple[tuple[str, tuple[CallAnswer, ...]], ...], CallAnswer | None]:
    """Each engine's answers, in order, and the default answer (SPEC D)."""
    calls: list[tuple[str, tuple[CallAnswer, ...]]] = []
    default: CallAnswer | None = None
    calls_where = _given(reader, fields, "calls")
    if calls_where is None:
        return (), None
    node = calls_where.node
    if not isinstance(node, yaml.MappingNode):
        raise reader.error(calls_where, "'calls' must map engines to lists of answers")
    for key_node, value_node in node.value:
        raw_key = reader.scalar(_Where(key_node, "calls"))
        key_where = _Where(value_node, f"calls.{raw_key}")
        if raw_key == values.DEFAULT_KEY:
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
    return tuple(calls), default


def _policy(reader: _Reader, fields: Mapping[str, _Where]) -> Policy:
    where = _given(reader, fields, "policy")
    if where is None:
        return DEFAULT_POLICY
    try:
        return parse_policy(construct_yaml(where.node))
    except ValueError as exc:
        raise reader.error(None, str(exc), node=where.node) from None


class _Span:
    """The scenario's times, read in its zone: `start`, `until`, and what happens between them
    (messages, reports by other runs, usage periods)."""

    def __init__(self, reader: _Reader, zone: ZoneInfo, zone_name: str) -> None:
        self.reader = reader
        self.zone = zone
        self.zone_name = zone_name
        self.start = datetime.min.replace(tzinfo=UTC)
        self.until: datetime | None = None

    def time(self, where: _Where) -> datetime:
        return self.reader.local_time(where, self.zone, self.zone_name)

    def read(self, fields: Mapping[str, _Where]) -> None:
        self.start = self.time(fields["start"])
        until = _given(self.reader, fields, "until")
        if until is not None:
            self.until = self.time(until)
            if self.until.astimezone(UTC) <= self.start.astimezone(UTC):
                raise self.reader.error(until, "must be after 'start'")

    def _inside(self, where: _Where, stamp: datetime, what: str) -> None:
        if stamp.astimezone(UTC) < self.start.astimezone(UTC):
            raise self.reader.error(where, f"a {what} cannot arrive before 'start'")
        if self.until is not None and stamp.astimezone(UTC) > self.until.astimezone(UTC):
            raise self.reader.error(where, f"a {what} after 'until' would never arrive")

    def messages(self, fields: Mapping[str, _Where]) -> tuple[datetime, ...]:
        messages: list[datetime] = []
        given = _given(self.reader, fields, "messages")
        for where in self.reader.sequence(given, "'messages'") if given is not None else ():
            stamp = self.time(where)
            self._inside(where, stamp, "message")
            messages.append(stamp)
        return tuple(messages)

    def peers(self, fields: Mapping[str, _Where]) -> tuple[PeerReport, ...]:
        peers: list[PeerReport] = []
        given = _given(self.reader, fields, "peers")
        for where in self.reader.sequence(given, "'peers'") if given is not None else ():
            report = self.reader.peer(where, self.zone, self.zone_name)
            self._inside(where, report.at, "report")
            peers.append(report)
        return tuple(peers)

    def usage(self, fields: Mapping[str, _Where]) -> tuple[UsagePeriod, ...]:
        where = _given(self.reader, fields, "usage")
        if where is None:
            return ()
        reader = self.reader
        if not isinstance(where.node, yaml.MappingNode):
            raise reader.error(where, "maps providers to lists of periods, e.g. claude: "
                               "[{from: ..., to: ..., warning: 0.97}]")
        usage: list[UsagePeriod] = []
        for key_node, value_node in where.node.value:
            name = reader.scalar(_Where(key_node, "usage"))
            key_where = _Where(value_node, f"usage.{name}")
            if name not in PROVIDERS:
                raise reader.error(key_where, f"unknown provider {name!r} (known: "
                                   f"{', '.join(PROVIDERS)})", node=key_node)
            mine: list[UsagePeriod] = []
            for item in reader.sequence(key_where, f"usage.{name}"):
                period = reader.period(str(name), item, self.zone, self.zone_name)
                for other in mine:
                    if (period.start.astimezone(UTC) < other.end.astimezone(UTC)
                            and other.start.astimezone(UTC) < period.end.astimezone(UTC)):
                        raise reader.error(item, "overlaps an earlier period of "
                                           f"{name}; periods of one account follow each other")
                mine.append(period)
            usage.extend(mine)
        return tuple(usage)


# --------------------------------------------------------------------------------------------
# Writing



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
    if answer.duration != values.DEFAULT_CALL_DURATION:
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
    if report.source != values.DEFAULT_PEER:
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
        calls[values.DEFAULT_KEY] = _answer_data(scenario.default)
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

