"""Every number the scheduler's policy uses, each beside the SPEC rule that fixes it.

Nothing else in `autodev_core.scheduler` writes a duration or a count literally. The constants
below are the SPEC's; `Policy` carries them as one frozen value in `SchedulerConfig.policy`,
which an orchestrator (or a team's `autodev.yaml`, or a scenario) may change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any, Final

import attrs

from ..engine import PROVIDERS

#: A6: no reset readable in a notice — claude waits one hour, codex and agy probe every 30 min.
DEFAULT_LIMIT_WAIT: Final = MappingProxyType({
    "claude": timedelta(hours=1),
    "codex": timedelta(minutes=30),
    "agy": timedelta(minutes=30),
})

#: A27: an unreachable provider is tried again after 1, 2, 4 and 8 minutes ...
OUTAGE_RETRIES: Final[tuple[timedelta, ...]] = (
    timedelta(minutes=1),
    timedelta(minutes=2),
    timedelta(minutes=4),
    timedelta(minutes=8),
)
#: ... A27: then every 15 minutes while the outage lasts, with no deadline.
OUTAGE_RETRY_EVERY: Final[timedelta] = timedelta(minutes=15)

#: A28: the wait after the n-th consecutive failure (1 s, then 1, 2, 4, 8, 15, 30 min) ...
BACKOFF: Final[tuple[timedelta, ...]] = (
    timedelta(seconds=1),
    timedelta(minutes=1),
    timedelta(minutes=2),
    timedelta(minutes=4),
    timedelta(minutes=8),
    timedelta(minutes=15),
    timedelta(minutes=30),
)
#: ... A28: then one hour each time.
BACKOFF_CAP: Final[timedelta] = timedelta(hours=1)

#: A29/A41: the run pauses at this many consecutive failed attempts, whoever made them.
GIVE_UP_AFTER: Final[int] = 12

#: A31: a participant ending this many turns in a row without a post pauses the run at once.
EMPTY_TURNS_PAUSE: Final[int] = 3

#: One retry loop (docs/limits.md, "Whose retries"): a CLI that retries a failed request by
#: itself (claude: 10 times over about three minutes by default) makes a handover (A15, A36) or
#: the outage schedule (A27) start minutes late. autodev lets claude retry this many times
#: inside one call (`CLAUDE_CODE_MAX_RETRIES`; about 2 s), so a passing blip is still absorbed
#: and anything longer reaches the scheduler's own waits (A27, A28) at once.
CLI_OWN_RETRIES: Final[int] = 2


def default_limit_wait(provider: str) -> timedelta:
    """A6: how long an engine is taken out when its notice carried no readable reset."""
    return DEFAULT_LIMIT_WAIT[provider]


def backoff_after(failures: int) -> timedelta:
    """A28: the wait after `failures` consecutive failures (1-based)."""
    if failures < 1:
        raise ValueError(f"backoff_after needs at least one failure, not {failures}")
    return BACKOFF[failures - 1] if failures <= len(BACKOFF) else BACKOFF_CAP


def outage_retry_after(attempts: int) -> timedelta:
    """A27: the wait before the next try of a provider that failed `attempts` times in a row."""
    if attempts < 1:
        raise ValueError(f"outage_retry_after needs at least one attempt, not {attempts}")
    return OUTAGE_RETRIES[attempts - 1] if attempts <= len(OUTAGE_RETRIES) else OUTAGE_RETRY_EVERY


# ------------------------------------------------------------------------------------------------
# The same numbers as a value an orchestrator can change (docs/orchestrators.md)


def _durations(value: Iterable[timedelta]) -> tuple[timedelta, ...]:
    return tuple(value)


def _limit_waits(
    value: Mapping[str, timedelta] | Iterable[tuple[str, timedelta]],
) -> tuple[tuple[str, timedelta], ...]:
    """Any mapping (or pairs) of provider -> wait, completed with the A6 defaults, in
    PROVIDERS order (a tuple, so a policy stays hashable)."""
    given = dict(value.items() if isinstance(value, Mapping) else value)
    unknown = sorted(set(given) - set(PROVIDERS))
    if unknown:
        raise ValueError(
            f"Policy.limit_wait: unknown provider {unknown[0]!r} (one of {', '.join(PROVIDERS)})"
        )
    merged = {**DEFAULT_LIMIT_WAIT, **given}
    return tuple((provider, merged[provider]) for provider in PROVIDERS)


#: No duration in a policy is longer than this (a year): it keeps every instant in range.
MAX_POLICY_SECONDS: Final = 366 * 24 * 3600


def _positive_duration(name: str, value: object) -> None:
    if not isinstance(value, timedelta):
        raise TypeError(f"Policy.{name} must be a timedelta, not {type(value).__name__}")
    if not timedelta(0) < value <= timedelta(seconds=MAX_POLICY_SECONDS):
        raise ValueError(
            f"Policy.{name} must be more than 0 s and at most a year, not "
            f"{value.total_seconds():g} s"
        )


def _positive_count(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"Policy.{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"Policy.{name} must be at least 1, not {value}")


def _hand_over_at(value: object) -> float:
    """A fraction of a window, checked before it becomes a float (a bool is no number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"Headroom.hand_over_at must be a number, not {value!r}")
    if not 0 < value <= 1:  # (NaN fails this too)
        raise ValueError(
            f"Headroom.hand_over_at must be more than 0 and at most 1 (a fraction of the "
            f"window: 0.95 is 95 %), not {value!r}"
        )
    return float(value)


@attrs.frozen
class Headroom:
    """Opt-in (docs/limits.md): act before the limit. When an engine's last usage reading (a healthy
    call's own report, A1: nothing is polled) is at or above `hand_over_at` of its window, a
    new turn on it prefers a free engine that is not (docs/limits.md)."""

    hand_over_at: float = attrs.field(converter=_hand_over_at)


def _headroom(value: object) -> Headroom | None:
    if value is None or isinstance(value, Headroom):
        return value
    return Headroom(hand_over_at=value)


@attrs.frozen
class Policy:
    """Every number of the scheduler's policy, frozen and validated; the defaults are the SPEC's.

    The words follow tenacity and stamina where they fit, without their semantics: a failed
    call (A28) waits `wait[n-1]` after the n-th failure in a row, then `wait_max` each time;
    the run pauses at `attempts` failed attempts in a row (A29, A41) and when a participant ends
    `empty_turns` turns in a row without a post (A31). An unreachable provider is tried again
    after `outage_wait[n-1]` at its n-th failure in a row, then every `outage_wait_max` (A27).
    A limit notice with no readable reset takes its engine out for `limit_wait` of its provider
    (A6). Every duration is positive; counts are at least 1. `headroom` (None: off, the SPEC)
    hands turns over before a limit when a usage reading nears it (docs/limits.md, `Headroom`; a
    number is read as its `hand_over_at`).
    """

    wait: tuple[timedelta, ...] = attrs.field(default=BACKOFF, converter=_durations)
    wait_max: timedelta = BACKOFF_CAP
    attempts: int = GIVE_UP_AFTER
    empty_turns: int = EMPTY_TURNS_PAUSE
    outage_wait: tuple[timedelta, ...] = attrs.field(default=OUTAGE_RETRIES, converter=_durations)
    outage_wait_max: timedelta = OUTAGE_RETRY_EVERY
    limit_wait: tuple[tuple[str, timedelta], ...] = attrs.field(
        factory=lambda: _limit_waits({}), converter=_limit_waits
    )
    headroom: Headroom | None = attrs.field(default=None, converter=_headroom)

    def __attrs_post_init__(self) -> None:
        for index, value in enumerate(self.wait):
            _positive_duration(f"wait[{index}]", value)
        _positive_duration("wait_max", self.wait_max)
        for index, value in enumerate(self.outage_wait):
            _positive_duration(f"outage_wait[{index}]", value)
        _positive_duration("outage_wait_max", self.outage_wait_max)
        _positive_count("attempts", self.attempts)
        _positive_count("empty_turns", self.empty_turns)
        for provider, value in self.limit_wait:
            _positive_duration(f"limit_wait[{provider!r}]", value)

    def backoff_after(self, failures: int) -> timedelta:
        """A28: the wait after `failures` consecutive failures (1-based)."""
        if failures < 1:
            raise ValueError(f"backoff_after needs at least one failure, not {failures}")
        return self.wait[failures - 1] if failures <= len(self.wait) else self.wait_max

    def outage_retry_after(self, attempts: int) -> timedelta:
        """A27: the wait before the next try of a provider that failed `attempts` times."""
        if attempts < 1:
            raise ValueError(f"outage_retry_after needs at least one attempt, not {attempts}")
        if attempts <= len(self.outage_wait):
            return self.outage_wait[attempts - 1]
        return self.outage_wait_max

    def default_limit_wait(self, provider: str) -> timedelta:
        """A6: how long an engine is out when its notice carried no readable reset."""
        for name, value in self.limit_wait:
            if name == provider:
                return value
        raise ValueError(f"unknown provider {provider!r}")

    def give_up_span(self) -> timedelta:
        """A29: the waiting the run did before it gave up (about five hours by default)."""
        return sum((self.backoff_after(n) for n in range(1, self.attempts)), timedelta(0))


#: SPEC A6, A27-A31 exactly.
DEFAULT_POLICY: Final = Policy()

#: The keys of a `policy:` mapping in a team's autodev.yaml or a scenario file.
POLICY_KEYS: Final = (
    "wait", "wait_max", "attempts", "empty_turns", "outage_wait", "outage_wait_max", "limit_wait",
    "headroom",
)
#: The keys of a `policy.headroom` mapping (docs/limits.md).
HEADROOM_KEYS: Final = ("hand_over_at",)


def parse_policy(data: object, *, where: str = "policy") -> Policy:
    """A `policy:` mapping from a human-written file (durations in seconds) -> `Policy`.

    Raises `ValueError` naming the field (`policy.wait[2]`, `policy.limit_wait.codex`, …); the
    callers turn it into a `ConfigError` with the file and line.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"{where} must be a mapping of {', '.join(POLICY_KEYS)}")
    fields: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{where}.{key}"
        if key not in POLICY_KEYS:
            raise ValueError(f"unknown key {name!r} (known keys: {', '.join(POLICY_KEYS)})")
        if key in ("attempts", "empty_turns"):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")
            fields[key] = value
        elif key in ("wait", "outage_wait"):
            if not isinstance(value, list):
                raise ValueError(f"{name} must be a list of durations in seconds, not {value!r}")
            fields[key] = tuple(_seconds(f"{name}[{i}]", item) for i, item in enumerate(value))
        elif key == "limit_wait":
            if not isinstance(value, Mapping):
                raise ValueError(f"{name} must map providers to seconds, not {value!r}")
            waits = {}
            for provider, item in value.items():
                if provider not in PROVIDERS:
                    raise ValueError(
                        f"{name}: unknown provider {provider!r} (one of {', '.join(PROVIDERS)})"
                    )
                waits[provider] = _seconds(f"{name}.{provider}", item)
            fields[key] = waits
        elif key == "headroom":
            fields[key] = _parse_headroom(value, name)
        else:
            fields[key] = _seconds(name, value)
    return Policy(**fields)


def _parse_headroom(value: object, name: str) -> Headroom | None:
    """`headroom: {hand_over_at: 0.95}` (or `headroom: off` / null: the SPEC's default)."""
    if value is None or value is False:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping such as {{hand_over_at: 0.95}}, not {value!r}")
    for key in value:
        if key not in HEADROOM_KEYS:
            raise ValueError(
                f"unknown key '{name}.{key}' (known keys: {', '.join(HEADROOM_KEYS)})"
            )
    if "hand_over_at" not in value:
        raise ValueError(f"{name} needs hand_over_at (a fraction of the window, e.g. 0.95)")
    at = value["hand_over_at"]
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not 0 < at <= 1:
        raise ValueError(
            f"{name}.hand_over_at must be a fraction of the window, more than 0 and at most 1 "
            f"(0.95 is 95 %), not {at!r}"
        )
    return Headroom(hand_over_at=at)


def _seconds(name: str, value: object) -> timedelta:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a duration in seconds, not {value!r}")
    if not 0 < value <= MAX_POLICY_SECONDS:
        raise ValueError(
            f"{name} must be more than 0 and at most {MAX_POLICY_SECONDS} seconds, not {value!r}"
        )
    return timedelta(seconds=value)


def policy_data(policy: Policy) -> dict[str, Any]:
    """The `policy:` mapping of a file for `policy` (durations in seconds): only what differs
    from the SPEC's numbers, so `parse_policy(policy_data(p)) == p`."""

    def seconds(value: timedelta) -> int | float:
        total = value.total_seconds()
        return int(total) if total == int(total) else total

    data: dict[str, Any] = {}
    if policy.wait != DEFAULT_POLICY.wait:
        data["wait"] = [seconds(v) for v in policy.wait]
    if policy.wait_max != DEFAULT_POLICY.wait_max:
        data["wait_max"] = seconds(policy.wait_max)
    if policy.attempts != DEFAULT_POLICY.attempts:
        data["attempts"] = policy.attempts
    if policy.empty_turns != DEFAULT_POLICY.empty_turns:
        data["empty_turns"] = policy.empty_turns
    if policy.outage_wait != DEFAULT_POLICY.outage_wait:
        data["outage_wait"] = [seconds(v) for v in policy.outage_wait]
    if policy.outage_wait_max != DEFAULT_POLICY.outage_wait_max:
        data["outage_wait_max"] = seconds(policy.outage_wait_max)
    changed = {p: seconds(v) for (p, v), (_, d) in zip(
        policy.limit_wait, DEFAULT_POLICY.limit_wait, strict=True) if v != d}
    if changed:
        data["limit_wait"] = changed
    if policy.headroom is not None:
        at = policy.headroom.hand_over_at
        data["headroom"] = {"hand_over_at": int(at) if at == int(at) else at}
    return data
