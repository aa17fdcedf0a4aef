"""What a provider CLI's output says: a limit, a network outage, a login problem, or other.

SPEC D `detect_limit` and `classify_output`; rules A1-A7 (limits), A26 and A37 (network),
A32 (claude not logged in). Pure and total: any text in, a value out, in time linear in the
size of the output (keyword scans, then bounded windows: see `_bounded`).

Precedence, when one output says several things (documented in docs/limits.md):

1. a structured limit (claude's `rate_limit_event` rejected/blocked, agy's `AGY_ERROR` quota,
   the API's `usage_limit_reached`) or a limit notice — a notice proves the provider answered
   (A40), so it beats any network word in the same output;
2. claude not logged in (A32) — the provider answered, and retrying cannot help;
3. a network error (A26, A37) — only while the call has not ended well: an exit code of 0 or a
   terminal success event (claude `result` success, codex `turn.completed`) means the CLI
   recovered from its own retries;
4. anything else is "other" (A7): a post or a plain failure, the caller decides which.

It works on partial output too: the shell calls `classify_output` while a call streams (A37),
with `exit_code=None`.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, tzinfo

from ._bounded import Meter
from ._failures import _LOGIN, _NETWORK, scan_login, scan_network
from ._notices import _AGY_KEYWORDS, _KEYWORDS, Found, scan_limit
from ._resets import from_epoch
from ._streams import MODEL_TEXT_MAX_CHARS, Output, cut_relevant, examinable, triggers_for
from .classification import Classification, LimitNotice
from .engine import PROVIDERS

__all__ = [
    "LIMIT_STATUSES",
    "MODEL_TEXT_MAX_CHARS",
    "classify_output",
    "detect_limit",
    "detect_login_error",
    "detect_network_error",
]

# A2: claude's `rate_limit_event` statuses that are limits. `allowed` and `allowed_warning`
# come on every healthy turn (often with `overageStatus: "rejected"`) and are never limits.
LIMIT_STATUSES = frozenset({"rejected", "blocked", "denied"})

# What each detector reads for (see `_streams.cut_relevant`): a piece holding none of these
# words holds none of its keywords, so it is left unread. `rate_limit_event` holds `limit`;
# a terminal success (A26: the call ended well) holds `success` or `complete`. Worked out on
# first use (the keyword tuples are those `keyword_hits` groups anyway).
_ENDED_WELL = ("success", "complete")


def _limit_keywords(provider: str) -> tuple[str, ...]:
    return _KEYWORDS + _AGY_KEYWORDS if provider == "agy" else _KEYWORDS


@functools.cache
def _words(detector: str, provider: str) -> tuple[bytes, ...]:
    if detector == "limit":
        return triggers_for(_limit_keywords(provider))
    if detector == "login":
        return triggers_for(_LOGIN)
    if detector == "network":
        return triggers_for(_NETWORK, extra=_ENDED_WELL)
    return triggers_for(_limit_keywords(provider), _LOGIN, _NETWORK, extra=_ENDED_WELL)


def _check(provider: str, now: datetime, local_tz: tzinfo) -> None:
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise ValueError("now must be an aware datetime (SPEC 0.1: time enters as an argument)")
    if not isinstance(local_tz, tzinfo):
        raise ValueError("local_tz must be a tzinfo (the machine's zone)")


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _limit(
    provider: str, output: Output, now: datetime, local_tz: tzinfo, meter: Meter | None
) -> LimitNotice | None:
    structured: Found | None = None
    for event in output.rate_limits:
        if event.status in LIMIT_STATUSES:
            reset = from_epoch(event.resets_at, now) if event.resets_at is not None else None
            structured = Found(text=event.text, reset_at=reset)
            if reset is not None:
                break
    if structured is not None and structured.reset_at is not None:
        return LimitNotice(provider=provider, reset_at=structured.reset_at, text=structured.text)
    first: Found | None = None
    # The CLI's own words first (events, stderr), then short model text (A5).
    ordered = sorted(output.pieces, key=lambda piece: piece.origin != "cli")
    for piece in ordered:
        text = examinable(piece)
        if not text:
            continue
        found = scan_limit(text, provider, now, local_tz, meter)
        if found is None:
            continue
        if found.reset_at is not None:
            return LimitNotice(
                provider=provider,
                reset_at=found.reset_at,
                text=structured.text if structured is not None else found.text,
            )
        if first is None:
            first = found
    chosen = structured or first
    if chosen is None:
        return None
    return LimitNotice(provider=provider, reset_at=None, text=chosen.text)


def _login(provider: str, output: Output, meter: Meter | None) -> str | None:
    if provider != "claude":  # A32: codex and agy have no login check
        return None
    for piece in output.pieces:
        text = examinable(piece)
        if text:
            found = scan_login(text, meter)
            if found is not None:
                return found
    return None


def _network(output: Output, exit_code: int | None, meter: Meter | None) -> str | None:
    if exit_code == 0 or output.succeeded:
        return None  # the call ended well: the CLI's own retries got through
    for piece in output.pieces:
        text = examinable(piece)
        if text:
            found = scan_network(text, model_text=piece.origin == "model", meter=meter)
            if found is not None:
                return found
    return None


def _classify(
    provider: str,
    stdout: str,
    stderr: str,
    exit_code: int | None,
    now: datetime,
    local_tz: tzinfo,
    meter: Meter | None = None,
) -> Classification:
    _check(provider, now, local_tz)
    now = now.astimezone(UTC)  # A6: durations are elapsed time, whatever zone `now` carries
    output = cut_relevant(_text(stdout), _text(stderr), provider, _words("all", provider))
    limit = _limit(provider, output, now, local_tz, meter)
    if limit is not None:
        return Classification(kind="limit", limit=limit, text=limit.text)
    login = _login(provider, output, meter)
    if login is not None:
        return Classification(kind="login", text=login)
    network = _network(output, exit_code, meter)
    if network is not None:
        return Classification(kind="network", text=network)
    return Classification(kind="other")


def classify_output(
    provider: str,
    *,
    stdout: str = "",
    stderr: str = "",
    exit_code: int | None = None,
    now: datetime,
    local_tz: tzinfo,
) -> Classification:
    """The meaning of one call's output, complete or partial (SPEC D; A2-A7, A26, A32, A37)."""
    return _classify(provider, stdout, stderr, exit_code, now, local_tz)


def detect_limit(
    provider: str,
    *,
    stdout: str = "",
    stderr: str = "",
    exit_code: int | None = None,
    now: datetime,
    local_tz: tzinfo,
) -> LimitNotice | None:
    """The limit the call reported (A2-A6), or None. `reset_at` is later than `now`, or None."""
    _check(provider, now, local_tz)
    now = now.astimezone(UTC)  # A6: durations are elapsed time, whatever zone `now` carries
    del exit_code  # a limit is a limit however the CLI exits (A17: even after a post)
    output = cut_relevant(_text(stdout), _text(stderr), provider, _words("limit", provider))
    return _limit(provider, output, now, local_tz, None)


def detect_network_error(
    provider: str, *, stdout: str = "", stderr: str = "", exit_code: int | None = None
) -> str | None:
    """The network error line of a failed (or still running) call, or None (A26, A37).

    Limits and login are not looked at here; `classify_output` applies the precedence.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    output = cut_relevant(_text(stdout), _text(stderr), provider, _words("network", provider))
    return _network(output, exit_code, None)


def detect_login_error(provider: str, *, stdout: str = "", stderr: str = "") -> str | None:
    """claude's `Not logged in · Please run /login` line, or None; always None for codex and agy
    (A32)."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    output = cut_relevant(_text(stdout), _text(stderr), provider, _words("login", provider))
    return _login(provider, output, None)
