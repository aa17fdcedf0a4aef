"""The scheduler's frozen state: the team's configuration and what the run knows right now.

The state is small on purpose (the thread is not in it): counters, the limit registry (A25: it
lives in memory, in this value), outages, where each participant sits on its chain, and the call
in flight or the deadline being slept towards. Only `step` makes new states.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, tzinfo
from types import MappingProxyType
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

from ..engine import PROVIDERS, Engine
from ..names import PAUSE_REASONS, STATUSES, PauseReason, Status
from ..participant import Participant
from .policy import DEFAULT_POLICY, Policy


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(f"unknown time zone {name!r}") from None


def _check_zone(_instance: object, _attribute: object, value: str) -> None:
    _zone(value)


def _frozen_providers(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _team(value: Iterable[Participant]) -> tuple[Participant, ...]:
    return tuple(value)


@attrs.frozen
class SchedulerConfig:
    """The team and the machine: what does not change while the run goes.

    `installed` names the CLIs this machine has (A12); `timezone` is the run's zone (log times);
    `max_iterations` counts calls (A30) and `max_runtime` the time spent in calls, never in sleeps
    (A21); both are unlimited when None (A43). `policy` holds every wait and count of A6 and
    A27-A31 (`Policy()`: the SPEC's numbers).
    """

    team: tuple[Participant, ...] = attrs.field(converter=_team)
    installed: frozenset[str] = attrs.field(
        default=frozenset(PROVIDERS), converter=_frozen_providers
    )
    timezone: str = attrs.field(default="UTC", validator=_check_zone)
    max_iterations: int | None = None
    max_runtime: timedelta | None = None
    policy: Policy = attrs.field(
        default=DEFAULT_POLICY, validator=attrs.validators.instance_of(Policy)
    )
    # Derived, never serialised: each participant's installed entries, in chain order (A10, A12),
    # the model to ask for on each (A13), the index of every id, the zone object, and whether a
    # budget is set.
    lanes: tuple[tuple[Engine, ...], ...] = attrs.field(init=False, eq=False, repr=False)
    models: tuple[tuple[str | None, ...], ...] = attrs.field(init=False, eq=False, repr=False)
    index: Mapping[str, int] = attrs.field(init=False, eq=False, repr=False)
    zone: tzinfo = attrs.field(init=False, eq=False, repr=False)
    #: whether a call or call-time budget is set (A30, A21; A43: unlimited when neither is)
    bounded: bool = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.team:
            raise ValueError("a team needs at least one participant")
        ids = [p.id for p in self.team]
        if len(set(ids)) != len(ids):
            raise ValueError(f"participant ids must be unique: {ids}")
        unknown = sorted(self.installed - set(PROVIDERS))
        if unknown:
            raise ValueError(f"unknown providers in installed: {unknown}")
        if self.max_iterations is not None and self.max_iterations < 0:
            raise ValueError("max_iterations cannot be negative")
        if self.max_runtime is not None and self.max_runtime < timedelta(0):
            raise ValueError("max_runtime cannot be negative")
        lanes = []
        for p in self.team:
            lane = tuple(e for e in p.entries if e.provider in self.installed)  # A12
            if not lane:
                raise ValueError(
                    f"participant {p.id!r} has no installed CLI among "
                    f"{', '.join(str(e) for e in p.entries)} (installed: "
                    f"{', '.join(sorted(self.installed)) or 'none'})"
                )
            lanes.append(lane)
        object.__setattr__(self, "lanes", tuple(lanes))
        models = tuple(
            tuple(p.model_for(e) for e in lane) for p, lane in zip(self.team, lanes, strict=True)
        )
        object.__setattr__(self, "models", models)  # A13: the pin on the primary only
        object.__setattr__(self, "index", MappingProxyType({pid: i for i, pid in enumerate(ids)}))
        object.__setattr__(self, "zone", _zone(self.timezone))
        bounded = self.max_iterations is not None or self.max_runtime is not None
        object.__setattr__(self, "bounded", bounded)


@attrs.frozen
class EngineLimit:
    """A8: `engine` reported a usage limit; it is taken out until `until` (A6 defaults applied).

    `read`: the reset was read from a notice (False: the A6 default stands in for it); `seen`:
    when the notice was seen (None: not known); `source`: who saw it — empty for this run, else
    the name of another run sharing the account (docs/sharing.md). Records merge by
    `merge_limit` (registry.py).
    """

    engine: Engine
    until: datetime
    read: bool = True
    seen: datetime | None = None
    source: str = ""


@attrs.frozen
class EngineUsage:
    """docs/limits.md: the last usage reading reported for one `window` of `engine` (by a healthy
    call of this run, or of another run sharing the account: `source`, empty for this run).
    `utilization` is the fraction of the window used; the reading counts until `until` — the
    window's reset (`read`), or, when the provider named none, the A6 default wait after
    `seen`. `threshold` is the provider's own warning threshold, when it said. Records of one
    window merge by `registry.merge_usage` (the newest reading wins). A reading is never a
    limit (A1, A2)."""

    engine: Engine
    utilization: float
    window: str
    until: datetime
    read: bool = True
    seen: datetime | None = None
    source: str = ""
    threshold: float | None = None


@attrs.frozen
class UsagePoint:
    """One reading of an account window, kept for the forecast (docs/limits.md "Forecast";
    issue 37): `account` the window's account key as text (`claude`; an engine's name for a
    window of its own), `seen` when it was read, `resets_at` the window's reset when said. A
    display only: no decision reads the series (A1)."""

    account: str
    window: str
    seen: datetime
    utilization: float
    resets_at: datetime | None = None


@attrs.frozen
class Outage:
    """A26: `provider` could not be reached `attempts` times in a row; tried again at `retry_at`."""

    provider: str = attrs.field(validator=attrs.validators.in_(PROVIDERS))
    retry_at: datetime
    attempts: int = 1


@attrs.frozen
class Call:
    """The call in flight: who runs it, on which engine, since when, and whose turn it is
    (`approved`: the gate-approved turn of A22, inserted before the owed one)."""

    participant: str
    engine: Engine
    started_at: datetime
    turn_owner: str
    approved: bool = False


@attrs.frozen
class SchedulerState:
    """Everything the scheduler knows. Build the first one with `initial_state(config)`.

    - `due`: the participant the next turn is owed to (A33); `approved`: a gate-approved turn
      inserted before it (A22); `gates`: participants with a pending gate (A16).
    - `limits` / `outages`: the registry (A8, A25, A26), sorted by engine / provider.
    - `failures`: consecutive failed attempts of the run (A28, A41); `empties`: consecutive turns
      each participant ended without a post (A31).
    - `seats`: the lane entry each participant last ran on; `passed`: a bit mask of the earlier
      entries it passed because they were limited then (coming back to one is the A23 line).
    - `call`: the call in flight; `wait_until`: the deadline of the current wait (A18, A27, A28).
    - `fresh`: new input arrived since the last call; `last_runner`: who made it (B18).
    - `iterations`: calls made (A30); `runtime`: time spent in calls (A21).
    - `last_event_at`: the `now` of the last event fed to `step` (None before the first): an
      event earlier than it is refused, time never goes backwards (A38).
    - `readings`: the last usage reading of each engine's window (docs/limits.md), sorted by engine
      then window; kept whatever the policy (`autodev status` forecasts from them), acted on
      only when `config.policy.headroom` is set.
    - `usage_series`: the recent readings of each account window, for the forecast of `autodev
      status` (`forecast.trim_series` keeps it bounded: the window's current cycle, at most
      `SERIES_MAX` readings); never read by a decision (A1).
    - `paused_for`: why the run is `paused` — `operator` (a `PauseRequested`), `empty` (A31),
      `failures` (A29) or `login` (A32) — and None whenever it is not paused (a state saved
      before the field existed loads with None; `autodev status` then says plain `paused`).
    """

    config: SchedulerConfig
    status: Status = "stopped"
    due: int = 0
    approved: str | None = None
    gates: frozenset[str] = frozenset()
    limits: tuple[EngineLimit, ...] = ()
    outages: tuple[Outage, ...] = ()
    failures: int = 0
    empties: tuple[int, ...] = ()
    seats: tuple[int, ...] = ()
    passed: tuple[int, ...] = ()
    call: Call | None = None
    wait_until: datetime | None = None
    fresh: bool = True
    last_runner: str | None = None
    iterations: int = 0
    runtime: timedelta = timedelta(0)
    last_event_at: datetime | None = None
    readings: tuple[EngineUsage, ...] = ()
    usage_series: tuple[UsagePoint, ...] = ()
    paused_for: PauseReason | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(PAUSE_REASONS)))

    def __attrs_post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r} (one of {', '.join(STATUSES)})")
        n = len(self.config.team)
        if not (len(self.empties) == len(self.seats) == len(self.passed) == n):
            raise ValueError("empties, seats and passed hold one entry per participant")
        if not 0 <= self.due < n:
            raise ValueError(f"due index {self.due} outside a team of {n}")


def initial_state(config: SchedulerConfig) -> SchedulerState:
    """A run that has not started: status `stopped` until `RunStarted` (A42 has no other idle)."""
    n = len(config.team)
    return SchedulerState(
        config=config,
        gates=frozenset(p.id for p in config.team if p.gate),
        empties=(0,) * n,
        seats=(0,) * n,
        passed=(0,) * n,
    )
