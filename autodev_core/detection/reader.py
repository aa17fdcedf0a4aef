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
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, tzinfo

import attrs

from ..engine import PROVIDERS
from ._bounded import Meter
from ._failures import _LOGIN, _NETWORK, scan_login, scan_network
from ._notices import (
    _AGY_KEYWORDS,
    _KEYWORDS,
    Candidate,
    PreparedCandidate,
    candidates,
)
from ._resets import from_epoch
from ._streams import (
    MODEL_TEXT_MAX_CHARS,
    Output,
    Piece,
    codex_block_after,
    cut_relevant,
    examinable,
    stderr_cut_line,
    triggers_for,
)
from .classification import (
    MAX_UTILIZATION,
    Classification,
    LimitNotice,
    UsageReading,
)

__all__ = [
    "LIMIT_STATUSES",
    "MODEL_TEXT_MAX_CHARS",
    "classify_output",
    "codex_block_after",
    "detect_limit",
    "detect_login_error",
    "detect_network_error",
    "stderr_cut_line",
]

# A2: claude's `rate_limit_event` statuses that are limits. `allowed` and `allowed_warning`
# come on every healthy turn (often with `overageStatus: "rejected"`) and are never limits.
LIMIT_STATUSES = frozenset({"rejected", "blocked", "denied"})
# docs/limits.md: the statuses of a healthy call whose `utilization` is a usage reading.
READING_STATUSES = frozenset({"allowed", "allowed_warning"})
_EPOCH_MS_FROM = 1e11  # an epoch this large is in milliseconds (as `_resets.from_epoch` reads)
_EPOCH_MAX = 253402300799  # 9999-12-31T23:59:59Z


def _epoch(value: float | None) -> datetime | None:
    """An epoch (seconds, or milliseconds when that large) as an aware UTC instant, whenever it
    falls: a reading's reset is the provider's word, kept as said (None when unreadable)."""
    if value is None or value != value or value <= 0:
        return None
    seconds = value / 1000 if value >= _EPOCH_MS_FROM else value
    if seconds > _EPOCH_MAX:
        return None
    return datetime.fromtimestamp(seconds, UTC)


def _usage(provider: str, output: Output) -> UsageReading | None:
    """The usage reading of a healthy call (docs/limits.md), from the CLI's own structured
    events only (claude's `rate_limit_event` with status `allowed`/`allowed_warning`: its own
    `utilization`, and each window of its `unifiedWindows`; never model text, A5). Of several,
    the highest utilization (the window nearest its limit), the later on a tie. codex and agy
    print none."""
    best: UsageReading | None = None
    for reading in _said(provider, output):
        if best is None or reading.utilization >= best.utilization:
            best = reading
    return best


def _said(provider: str, output: Output) -> Iterator[UsageReading]:
    """Every well-formed window reading the healthy events of `output` say, in the order said:
    an event's own window, then its `unifiedWindows` (the event's own window is the same
    window: its threshold holds there too). A utilization outside 0..MAX_UTILIZATION is no
    reading; a threshold outside it is no threshold (A5)."""
    for event in output.rate_limits:
        if event.status not in READING_STATUSES:
            continue
        said = [(event.utilization, event.window, event.resets_at, event.threshold)]
        said += [
            (w.utilization, w.window, w.resets_at,
             event.threshold if w.threshold is None and w.window == event.window else w.threshold)
            for w in event.windows
        ]
        for used, window, resets_at, threshold in said:
            if used is None or not 0 <= used <= MAX_UTILIZATION:
                continue
            if threshold is not None and not 0 <= threshold <= MAX_UTILIZATION:
                threshold = None
            yield UsageReading(provider=provider, utilization=used, window=window,
                               resets_at=_epoch(resets_at), threshold=threshold)


def _readings(provider: str, output: Output) -> tuple[UsageReading, ...]:
    """Each window's usage reading of a healthy call (issue 37, docs/limits.md "Readings per
    account window"): read as `_usage` reads them, one per window name, the later said winning
    (a stream's later event is the provider's newer word); in window-name order."""
    found: dict[str, UsageReading] = {}
    for reading in _said(provider, output):
        found[reading.window] = reading
    return tuple(found[name] for name in sorted(found))


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
    return _PreparedLimit.of(provider, output, meter).at(now, local_tz, meter)


@attrs.frozen
class _PreparedLimit:
    """What an output says about a limit, all but the instant-dependent part: the structured
    limits (text, `resetsAt`) and, per examinable piece in reading order (the CLI's own words
    first, then short model text, A5), the notices confirmed in it. `at` reads the resets."""

    provider: str
    structured: tuple[tuple[str, float | None], ...]
    # Each piece's notices: confirmed as they are asked for (`detect_limit` stops at the first
    # with a reset), or all of them once `resolved` (to be read at many instants).
    pieces: tuple[Iterable[Candidate | PreparedCandidate], ...]

    @classmethod
    def of(cls, provider: str, output: Output, meter: Meter | None) -> _PreparedLimit:
        structured = _structured_limits(output)
        return cls(provider, structured, tuple(
            candidates(t, provider, meter) for t in _examined_texts(output)
        ))

    @classmethod
    def resolved_of(cls, provider: str, output: Output) -> _PreparedLimit:
        """`of(provider, output, None).resolved()`, built at once."""
        structured = _structured_limits(output)
        return cls(provider, structured, tuple(
            tuple(c.prepared() for c in candidates(t, provider)) for t in _examined_texts(output)
        ))

    def at(self, now: datetime, local_tz: tzinfo, meter: Meter | None = None) -> LimitNotice | None:
        read = self.read(now, local_tz, meter)
        if read is None:
            return None
        return LimitNotice(provider=self.provider, reset_at=read[0], text=read[1],
                           reset_form=read[2])

    def read(
        self, now: datetime, local_tz: tzinfo, meter: Meter | None = None
    ) -> tuple[datetime | None, str, str | None] | None:
        """The limit at `now` as (reset or None, text, how the reset was written), or None: a
        structured limit with a reset (an epoch); else the first notice with a readable reset
        (with a structured limit's text when there is one); else the last structured limit,
        else the first notice, without a reset."""
        structured: str | None = None
        for text, resets_at in self.structured:
            structured = text
            if resets_at is not None:
                reset = from_epoch(resets_at, now)
                if reset is not None:
                    return reset, text, "epoch"
        first: str | None = None
        for piece in self.pieces:
            for candidate in piece:  # in order, up to the first with a reset (as `pick`)
                if candidate.__class__ is PreparedCandidate:
                    reset, text, form = candidate.read(now, local_tz)
                else:
                    found = candidate.found(now, local_tz, meter)
                    reset, text, form = found.reset_at, found.text, found.reset_form
                if reset is not None:
                    return reset, structured if structured is not None else text, form
                if first is None:
                    first = text
        chosen = structured if structured is not None else first
        return None if chosen is None else (None, chosen, None)

    def resolved(self) -> _PreparedLimit:
        """The same, with every piece's notices confirmed and their resets parsed now (to be
        read at many instants: only the resets' arithmetic is left to do at each)."""
        return attrs.evolve(self, pieces=tuple(
            tuple(c.prepared() if isinstance(c, Candidate) else c for c in piece)
            for piece in self.pieces
        ))


def _structured_limits(output: Output) -> tuple[tuple[str, float | None], ...]:
    """The CLI's own limit events as (text, resetsAt): rejected/blocked, naming the limit's
    reset or window. One naming neither is the server's throttle, a failed call (A2, A28)."""
    return tuple(
        (event.text, event.resets_at)
        for event in output.rate_limits
        if event.status in LIMIT_STATUSES and event.names_a_limit
    )


def _examined_texts(output: Output) -> list[str]:
    """The texts of the pieces the detectors may read, the CLI's own words first (A5)."""
    pieces = output.pieces
    if all(piece.origin == "cli" for piece in pieces):
        ordered: Iterable[Piece] = pieces
    else:  # a stable sort: the CLI's pieces, then the others, each in their order
        ordered = [p for p in pieces if p.origin == "cli"] + [
            p for p in pieces if p.origin != "cli"
        ]
    return [text for text in map(examinable, ordered) if text]


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
    if not output.rate_limits:
        return Classification(kind="other")
    return Classification(kind="other", usage=_usage(provider, output),
                          readings=_readings(provider, output))


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


@attrs.frozen
class PreparedClassification:
    """The meaning of one output read once, for reading at many instants (`simulate`).

    Only a limit's reset (and which notice is reported, the first with a readable reset)
    depends on the instant; the rest is worked out once. `at(now, local_tz)` equals
    `classify_output(..., now=now, local_tz=local_tz)` on the same output (SPEC D: classified
    exactly as real output is; property-tested).
    """

    limit: _PreparedLimit
    #: What the output says of login and the network, read when no limit can be in it (with a
    #: limit structured or noticed, a limit is read at every instant: None, not looked for).
    login: str | None
    network: str | None
    #: The usage reading of the output (docs/limits.md), the same at every instant.
    usage: UsageReading | None = None
    #: Each window's reading (issue 37), the same at every instant.
    readings: tuple[UsageReading, ...] = ()
    # The answer when no limit can be in it (nothing structured, no notice): the same at every
    # instant, so built once.
    fixed: Classification | None = attrs.field(init=False)

    @fixed.default
    def _fixed(self) -> Classification | None:
        if self.limit.structured or any(self.limit.pieces):
            return None
        if self.login is not None:
            return Classification(kind="login", text=self.login)
        if self.network is not None:
            return Classification(kind="network", text=self.network)
        return Classification(kind="other", usage=self.usage, readings=self.readings)

    def at(self, now: datetime, local_tz: tzinfo) -> Classification:
        provider = self.limit.provider
        _check(provider, now, local_tz)
        if self.fixed is not None:
            return self.fixed
        now = now.astimezone(UTC)  # A6: durations are elapsed time, whatever zone `now` has
        read = self.limit.read(now, local_tz)
        if read is not None:
            reset_at, text, form = read
            notice = LimitNotice(provider=provider, reset_at=reset_at, text=text,
                                 reset_form=form)
            return Classification(kind="limit", limit=notice, text=text)
        if self.login is not None:
            return Classification(kind="login", text=self.login)
        if self.network is not None:
            return Classification(kind="network", text=self.network)
        return Classification(kind="other", usage=self.usage, readings=self.readings)


def prepare_classification(
    provider: str, *, stdout: str = "", stderr: str = "", exit_code: int | None = None
) -> PreparedClassification:
    """`classify_output` but for the instant: see `PreparedClassification`."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    output = cut_relevant(_text(stdout), _text(stderr), provider, _words("all", provider))
    limit = _PreparedLimit.resolved_of(provider, output)
    if limit.structured or any(limit.pieces):
        # A limit is then read at every instant (the first notice, at worst, without a reset):
        # what the output says of login or the network never counts, so it is not looked for.
        return PreparedClassification(limit=limit, login=None, network=None)
    return PreparedClassification(
        limit=limit,
        login=_login(provider, output, None),
        network=_network(output, exit_code, None),
        usage=_usage(provider, output) if output.rate_limits else None,
        readings=_readings(provider, output) if output.rate_limits else (),
    )


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
