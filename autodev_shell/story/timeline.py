"""The run's story as rows (docs/timeline.md): a pure function of its structured lines and calls.

No I/O here: `build_timeline` takes the records of the events file (`record.read_events`), the
calls of the ledger and lanes (`calls.run_calls`) and a window, and returns one row for the run
(its status over time: running, the waits of A18/A26-A28, paused, stopped; the controls taken),
one per engine (its limits until their resets, A11; near its limit; its provider's outages, A27)
and one per participant (its calls, coloured by how they ended; hops, handovers, failures and
lifts as marks). Everything is clipped to the window; `now`, the present moment, is drawn as a line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Literal

import attrs

RowGroup = Literal["run", "engine", "participant"]

#: Log kinds drawn as marks on the participant's row, with the mark's kind.
_MARKS: Final[Mapping[str, str]] = {
    "hop-limited": "hop", "hop-unreachable": "hop", "hop-near-limit": "hop",
    "handover-limited": "handover", "handover-unreachable": "handover",
    "handover-near-limit": "handover", "failed": "failed", "lifted": "lifted",
    "gave-up": "paused", "empty-turns": "paused", "not-logged-in": "paused",
    "wait-own": "wait",
}


@attrs.frozen
class Call:
    """One CLI call as the call ledger or its lane tells it (C8): who, on what, from when to when
    (None: in flight), how it ended (`posted`, or what the output read as: `other`, `limit`,
    `network`, `login`, `cancelled`, `timed-out`), and what the CLI said it cost (claude's
    `total_cost_usd`) or used (codex's `tokens used`), when it said."""

    participant: str
    engine: str
    start: datetime
    end: datetime | None
    outcome: str
    cost_usd: float | None = None
    tokens: int | None = None


@attrs.frozen
class Span:
    start: datetime
    end: datetime
    kind: str
    label: str


@attrs.frozen
class Mark:
    at: datetime
    kind: str
    label: str


@attrs.frozen
class Row:
    group: RowGroup
    name: str
    spans: tuple[Span, ...] = ()
    marks: tuple[Mark, ...] = ()


@attrs.frozen
class Timeline:
    start: datetime
    end: datetime
    now: datetime
    rows: tuple[Row, ...]


def _when(record: Mapping[str, Any], key: str = "at") -> datetime | None:
    value = record.get(key)
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def _provider(engine: str) -> str:
    return engine.split(":", 1)[0]


class _Rows:
    """Rows by name, in the order first met."""

    def __init__(self, group: RowGroup) -> None:
        self.group = group
        self.spans: dict[str, list[Span]] = {}
        self.marks: dict[str, list[Mark]] = {}

    def touch(self, name: str) -> None:
        self.spans.setdefault(name, [])
        self.marks.setdefault(name, [])

    def span(self, name: str, span: Span) -> None:
        self.touch(name)
        self.spans[name].append(span)

    def mark(self, name: str, mark: Mark) -> None:
        self.touch(name)
        self.marks[name].append(mark)

    def rows(self, start: datetime, end: datetime) -> list[Row]:
        return [Row(self.group, name, _clip(self.spans[name], start, end),
                    tuple(m for m in self.marks[name] if start <= m.at <= end))
                for name in self.spans]


def _clip(spans: Iterable[Span], start: datetime, end: datetime) -> tuple[Span, ...]:
    return tuple(attrs.evolve(s, start=max(s.start, start), end=min(s.end, end))
                 for s in spans if s.end > start and s.start < end and s.end > s.start)


def build_timeline(
    records: Sequence[Mapping[str, Any]],
    calls: Sequence[Call],
    *,
    start: datetime,
    end: datetime,
    now: datetime,
) -> Timeline:
    """The rows of the window [start, end] (see the module's doc); spans still open end at
    `now` (a limit at its reset)."""
    if end <= start:
        raise ValueError("the window must end after it starts")
    timed = sorted(((at, r) for r in records if (at := _when(r)) is not None),
                   key=lambda pair: pair[0])
    run = _Rows("run")
    run.touch("run")
    engines = _Rows("engine")
    people = _Rows("participant")
    status: tuple[datetime, str] | None = None
    outages: dict[str, tuple[datetime, str]] = {}
    for at, record in timed:
        kind = record.get("kind")
        if kind == "status" and isinstance(record.get("status"), str):
            if status is not None:
                run.span("run", Span(status[0], at, status[1], status[1].replace("_", " ")))
            status = (at, record["status"])
            continue
        if kind == "control":
            run.mark("run", Mark(at, "control", str(record.get("message", ""))))
            continue
        if kind != "log":
            continue
        event = record.get("event")
        message = str(record.get("message", ""))
        engine = record.get("engine")
        participant = record.get("participant")
        until = _when(record, "until")
        if event in ("limit", "near-limit") and isinstance(engine, str):
            ends = until if until is not None and until > at else now
            engines.span(engine, Span(at, ends, "limited" if event == "limit" else "near-limit",
                                      message))
        elif event == "outage" and isinstance(record.get("provider"), str):
            outages.setdefault(record["provider"], (at, message))
        elif event == "reachable" and isinstance(record.get("provider"), str):
            began = outages.pop(record["provider"], None)
            if began is not None:
                _outage(engines, record["provider"], Span(began[0], at, "outage", began[1]))
        elif event == "posted" and isinstance(engine, str):
            engines.touch(engine)
        mark = _MARKS.get(event) if isinstance(event, str) else None
        if mark is not None and isinstance(participant, str):
            people.mark(participant, Mark(at, mark, message))
        elif mark == "paused":
            run.mark("run", Mark(at, "paused", message))
        if isinstance(record.get("target"), str):
            engines.touch(record["target"])
    if status is not None:
        run.span("run", Span(status[0], max(now, status[0]), status[1],
                             status[1].replace("_", " ")))
    for provider, (began_at, message) in outages.items():
        _outage(engines, provider, Span(began_at, max(now, began_at), "outage", message))
    for call in sorted(calls, key=lambda c: c.start):
        engines.touch(call.engine)
        ends = call.end if call.end is not None else max(now, call.start)
        how = "in a call" if call.end is None else call.outcome
        people.span(call.participant, Span(call.start, ends, "call-" + (
            "open" if call.end is None else call.outcome), f"{call.participant} on {call.engine}"
            f" ({how})"))
    rows = run.rows(start, end) + engines.rows(start, end) + people.rows(start, end)
    return Timeline(start, end, now, tuple(rows))


def _outage(engines: _Rows, provider: str, span: Span) -> None:
    """A27: an outage is its provider's: drawn on each of its engine rows (a row named after the
    provider when it has none yet)."""
    names = [name for name in engines.spans if _provider(name) == provider] or [provider]
    for name in names:
        engines.span(name, span)


# -- per participant (docs/timeline.md, Figures) ----------------------------------------------


@attrs.frozen
class ParticipantStats:
    participant: str
    calls: int
    posts: int
    failures: int
    seconds_in_calls: float
    cost_usd: float | None
    tokens: int | None


def participant_stats(
    records: Sequence[Mapping[str, Any]], calls: Sequence[Call],
    *, start: datetime | None = None, end: datetime | None = None,
) -> tuple[ParticipantStats, ...]:
    """Calls, posts (`posted` lines), failures (A28's `failed` lines), time in calls, and cost
    and tokens where the CLI reported them (None when no call of the window did), per participant,
    of the calls and lines that start in [start, end]."""

    def within(at: datetime | None) -> bool:
        return at is not None and (start is None or at >= start) and (end is None or at <= end)

    names: dict[str, None] = {}
    for call in calls:
        if within(call.start):
            names.setdefault(call.participant)
    posts: dict[str, int] = {}
    failures: dict[str, int] = {}
    for record in records:
        who = record.get("participant")
        if record.get("kind") != "log" or not isinstance(who, str) or not within(_when(record)):
            continue
        if record.get("event") == "posted":
            posts[who] = posts.get(who, 0) + 1
            names.setdefault(who)
        elif record.get("event") == "failed":
            failures[who] = failures.get(who, 0) + 1
            names.setdefault(who)
    stats = []
    for who in names:
        mine = [c for c in calls if c.participant == who and within(c.start)]
        costs = [c.cost_usd for c in mine if c.cost_usd is not None]
        tokens = [c.tokens for c in mine if c.tokens is not None]
        stats.append(ParticipantStats(
            participant=who, calls=len(mine), posts=posts.get(who, 0),
            failures=failures.get(who, 0),
            seconds_in_calls=sum((c.end - c.start).total_seconds() for c in mine
                                 if c.end is not None),
            cost_usd=round(sum(costs), 6) if costs else None,
            tokens=sum(tokens) if tokens else None,
        ))
    return tuple(stats)
