"""What `autodev status` shows of a stored scheduler state, read from its JSON (C6;
docs/performance.md).

Restoring the whole state (`from_json(text, SchedulerState)`) loads the scheduler and cattrs,
generates structuring code and rebuilds every participant, the policy and the zone: several
times a bare interpreter's start, for the eight fields status prints. `read_stored_status` reads
those fields straight from the JSON the serializer writes, checked as the restore checks them.
A state it cannot read so (a key missing, a value of another type: an older or hand-edited
file) raises `ValueError`, and the caller restores the whole state instead (`status_of`), which
decides. tests/project/test_cold_start.py checks that the two agree on the states the
scheduler writes.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from autodev_core.names import MODEL_CHARS, MODEL_FIRST, PAUSE_REASONS, PROVIDERS, STATUSES

if TYPE_CHECKING:
    from autodev_core.scheduler.state import SchedulerState

#: The statuses (A42), providers (A8) and model characters (A9) as the core states them, in its
#: dependency-free `names` module: checking a word loads neither the scheduler nor attrs.
_MODEL_FIRST: Final = frozenset(MODEL_FIRST)
_MODEL_CHARS: Final = frozenset(MODEL_CHARS)


class StoredLimit(NamedTuple):
    engine: str
    until: str
    source: str


class StoredOutage(NamedTuple):
    provider: str
    attempts: int
    retry_at: str


class StoredReading(NamedTuple):
    """A usage reading of one engine's window (docs/limits.md): `utilization` a fraction, `until`
    the window's reset (or, `read` False, the A6 default standing in for an unsaid one)."""

    engine: str
    window: str
    utilization: float
    until: str
    read: bool
    source: str


class StoredPoint(NamedTuple):
    """One reading of an account window's series (docs/limits.md "Forecast"; issue 37)."""

    account: str
    window: str
    seen: str
    utilization: float
    resets_at: str | None


class StoredStatus(NamedTuple):
    """The fields of a scheduler state that `autodev status` shows; instants as ISO 8601 text
    with their offset, as `status --json` prints them."""

    status: str
    timezone: str
    due: str
    wait_until: str | None
    limits: tuple[StoredLimit, ...]
    outages: tuple[StoredOutage, ...]
    failures: int
    iterations: int
    #: The last usage readings, and `Policy.headroom`'s threshold (None: off).
    readings: tuple[StoredReading, ...] = ()
    hand_over_at: float | None = None
    #: The account windows' recent readings, for the forecast (issue 37).
    series: tuple[StoredPoint, ...] = ()
    #: Why the run is paused (`SchedulerState.paused_for`; None: not paused, or not said).
    paused_for: str | None = None


def status_of(state: SchedulerState) -> StoredStatus:
    """The same fields, from a restored state."""
    return StoredStatus(
        status=state.status,
        timezone=state.config.timezone,
        due=state.config.team[state.due].id,
        wait_until=state.wait_until.isoformat() if state.wait_until is not None else None,
        limits=tuple(StoredLimit(str(r.engine), r.until.isoformat(), r.source)
                     for r in state.limits),
        outages=tuple(StoredOutage(o.provider, o.attempts, o.retry_at.isoformat())
                      for o in state.outages),
        failures=state.failures,
        iterations=state.iterations,
        readings=tuple(StoredReading(str(r.engine), r.window, r.utilization, r.until.isoformat(),
                                     r.read, r.source) for r in state.readings),
        hand_over_at=(state.config.policy.headroom.hand_over_at
                      if state.config.policy.headroom is not None else None),
        series=tuple(StoredPoint(p.account, p.window, p.seen.isoformat(), p.utilization,
                                 p.resets_at.isoformat() if p.resets_at is not None else None)
                     for p in state.usage_series),
        paused_for=state.paused_for,
    )


def read_stored_status(text: str) -> StoredStatus:
    """The fields of `status_of`, read from the JSON text of a stored `SchedulerState`;
    `ValueError` when the text is not what the serializer writes."""
    import json

    try:
        data = json.loads(text)
        return _read(data)
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as exc:
        raise ValueError(f"not a stored scheduler state as status reads it: {exc!r}") from None


def _read(data: dict[str, Any]) -> StoredStatus:
    from zoneinfo import ZoneInfo

    config = data["config"]
    team = _of(config["team"], list)
    due = _of(data["due"], int)
    if not 0 <= due < len(team):
        raise ValueError(f"due index {due} outside a team of {len(team)}")
    timezone = _of(config["timezone"], str)
    ZoneInfo(timezone)  # the restore refuses an unknown zone; status writes its times in it
    outages = []
    for o in _of(data["outages"], list):
        provider = _of(o["provider"], str)
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}")
        outages.append(StoredOutage(provider, _of(o["attempts"], int), _instant(o["retry_at"])))
    status = _of(data["status"], str)
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    wait = data["wait_until"]
    paused_for = data.get("paused_for")  # a state written before the field has none
    if paused_for is not None and paused_for not in PAUSE_REASONS:
        raise ValueError(f"unknown pause reason {paused_for!r}")
    return StoredStatus(
        status=status,
        timezone=timezone,
        due=_of(_of(team[due], dict)["id"], str),
        wait_until=None if wait is None else _instant(wait),
        limits=tuple(
            StoredLimit(_engine(_of(r["engine"], str)), _instant(r["until"]),
                        _of(r["source"], str))
            for r in _of(data["limits"], list)
        ),
        outages=tuple(outages),
        failures=_of(data["failures"], int),
        iterations=_of(data["iterations"], int),
        # A state written before readings existed has none.
        readings=tuple(
            StoredReading(_engine(_of(r["engine"], str)), _of(r["window"], str),
                          _fraction(r["utilization"]), _instant(r["until"]),
                          _of(r["read"], bool), _of(r["source"], str))
            for r in _of(data.get("readings", []), list)
        ),
        hand_over_at=_hand_over_at(_of(config["policy"], dict).get("headroom")),
        # A state written before the series existed has none (issue 37).
        series=tuple(
            StoredPoint(_of(p["account"], str), _of(p["window"], str), _instant(p["seen"]),
                        _fraction(p["utilization"]),
                        None if p["resets_at"] is None else _instant(p["resets_at"]))
            for p in _of(data.get("usage_series", []), list)
        ),
        paused_for=paused_for,
    )


def _fraction(value: Any) -> float:
    """A utilization as the serializer writes a float (an int when whole: JSON's `1`)."""
    if type(value) is int:
        value = float(value)
    number = float(_of(value, float))
    if not 0 <= number <= 10:
        raise ValueError(f"utilization {number!r} out of range")
    return number


def _hand_over_at(value: Any) -> float | None:
    if value is None:
        return None
    at = _fraction(_of(value, dict)["hand_over_at"])
    if not 0 < at <= 1:
        raise ValueError(f"hand_over_at {at!r} out of range")
    return at


def _of(value: Any, kind: type) -> Any:
    """`value`, when it is exactly of `kind` as JSON reads it (a bool is not an int here)."""
    if type(value) is not kind:
        raise TypeError(f"expected {kind.__name__}, found {value!r}")
    return value


def _engine(text: str) -> str:
    """An engine as the serializer writes it, `provider` or `provider:model`, unchanged (what
    `str(Engine.parse(text))` gives back); anything else (spaces, an unknown provider, a
    malformed model) is left to the full restore."""
    provider, sep, model = text.partition(":")
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}")
    if sep and not (model and model[0] in _MODEL_FIRST and _MODEL_CHARS.issuperset(model)):
        raise ValueError(f"not a model name as the serializer writes it: {model!r}")
    return text


def _instant(value: Any) -> str:
    """An aware ISO 8601 instant, written back as the restored datetime writes itself."""
    parsed = datetime.fromisoformat(_of(value, str))
    if parsed.utcoffset() is None:
        raise ValueError(f"date-time {value!r} has no UTC offset")
    return parsed.isoformat()
