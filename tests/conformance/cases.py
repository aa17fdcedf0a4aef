"""The conformance case table, as data (SPEC A2-A6, A26-A28).

Each `Case` names a CLI, a credential, how the stand-in API answers (a factory of the `Reply`
taking `now`, so resets are relative to the real clock) and what autodev must read from the
CLI's output (`Expect`):

- `kind`: "post" (a post, classification other), "limit" (A2), "failed" (a call that failed
  and is no limit, A27, A28), "network" (A26) or "login" (A32);
- `reset` (limits only): "server" (within a minute of the server's true reset, A3), "probe"
  (the printed time is not after now, so the limit is probed again about a minute after the
  notice, A6), "none" (no readable reset, A6);
- `usage`: the (window, utilization) pairs a healthy call reported (issue 25), or ().

Every reply carries its server-side true reset (`true_reset`, UTC or None).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal

import attrs

from . import anthropic_api as anthropic
from . import openai_api as openai
from .anthropic_api import Unified, Window

Cli = Literal["claude", "codex"]
Credential = Literal["oauth", "apikey", "key"]
Kind = Literal["post", "limit", "failed", "network", "login"]
ResetExpect = Literal["server", "probe", "none"]
AnyReply = anthropic.Reply | openai.Reply


@attrs.frozen
class Expect:
    """What autodev must read from a case's output."""

    kind: Kind
    reset: ResetExpect | None = None
    #: The usage reading, as (window, utilization): the window nearest its limit, of all the
    #: windows the CLI reported (docs/limits.md "Usage readings").
    usage: tuple[tuple[str, float], ...] = ()


@attrs.frozen
class Case:
    """One row of the table: `reply(now)` is the stand-in's answer for a call started at `now`
    (aware, UTC); `json` is codex's `exec --json`."""

    name: str
    cli: Cli
    credential: Credential
    reply: Callable[[datetime], AnyReply] = attrs.field(eq=False)
    expect: Expect
    json: bool = False
    note: str = ""

    @property
    def key(self) -> str:
        """The case's unique name across CLIs: `<cli>-<name>`."""
        return f"{self.cli}-{self.name}"


def _epoch(at: datetime) -> int:
    return int(at.timestamp())


def _at(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


# -- claude ---------------------------------------------------------------------------------------


def _claude_normal(now: datetime) -> anthropic.Reply:
    five, seven = _epoch(now + timedelta(hours=3, minutes=10)), _epoch(now + timedelta(days=4))
    return anthropic.Reply(unified=Unified(
        status="allowed", reset=five, claim="five_hour",
        windows=(("5h", Window(reset=five, utilization=0.31)),
                 ("7d", Window(reset=seven, utilization=0.12)))))


def _claude_allowed_warning(now: datetime) -> anthropic.Reply:
    five, seven = _epoch(now + timedelta(minutes=47)), _epoch(now + timedelta(days=2, hours=5))
    return anthropic.Reply(unified=Unified(
        status="allowed_warning", reset=five, claim="five_hour",
        windows=(("5h", Window(status="allowed_warning", reset=five, utilization=0.92,
                               surpassed_threshold=0.9)),
                 ("7d", Window(reset=seven, utilization=0.41)))))


def _claude_rejected(claim: str, reset: datetime, other_reset: datetime) -> anthropic.Reply:
    """A subscription's usage limit: 429 with the unified headers rejected (A2)."""
    tag, other = ("5h", "7d") if claim == "five_hour" else ("7d", "5h")
    epoch = _epoch(reset)
    windows = ((tag, Window(status="rejected", reset=epoch, utilization=1.0)),
               (other, Window(reset=_epoch(other_reset), utilization=0.58)))
    return anthropic.Reply(
        status=429, error_type="rate_limit_error",
        error_message="This request would exceed your account's rate limit. Please try again "
        "later.",
        unified=Unified(status="rejected", reset=epoch, claim=claim,
                        windows=tuple(sorted(windows))),
        true_reset=_at(epoch))


def _claude_five_hour(now: datetime) -> anthropic.Reply:
    return _claude_rejected("five_hour", now + timedelta(hours=2, minutes=13, seconds=27),
                            now + timedelta(days=5))


def _claude_weekly(now: datetime) -> anthropic.Reply:
    return _claude_rejected("seven_day", now + timedelta(days=3, hours=5, minutes=17, seconds=3),
                            now + timedelta(hours=1, minutes=2))


def _claude_same_minute(now: datetime) -> anthropic.Reply:
    return _claude_rejected("five_hour", now - timedelta(seconds=20), now + timedelta(days=5))


def _claude_error(status: int, kind: str, message: str) -> Callable[[datetime], anthropic.Reply]:
    def reply(_now: datetime) -> anthropic.Reply:
        return anthropic.Reply(status=status, error_type=kind, error_message=message)

    return reply


#: An API key's own rate-limit headers (no unified ones: those are the subscription's).
def _apikey_headers(now: datetime) -> tuple[tuple[str, str], ...]:
    soon = (now + timedelta(seconds=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (("anthropic-ratelimit-requests-limit", "4000"),
            ("anthropic-ratelimit-requests-remaining", "3999"),
            ("anthropic-ratelimit-requests-reset", soon),
            ("anthropic-ratelimit-tokens-limit", "2000000"),
            ("anthropic-ratelimit-tokens-remaining", "1999000"),
            ("anthropic-ratelimit-tokens-reset", soon))


def _claude_apikey_normal(now: datetime) -> anthropic.Reply:
    return anthropic.Reply(headers=_apikey_headers(now))


SPEND_LIMIT_RESET = datetime(2027, 1, 1, tzinfo=UTC)


def _claude_spend_limit(_now: datetime) -> anthropic.Reply:
    return anthropic.Reply(
        status=400, error_type="invalid_request_error",
        error_message="You have reached your specified API usage limits. You will regain "
        "access on 2027-01-01 at 00:00 UTC.",
        true_reset=SPEND_LIMIT_RESET)


CLAUDE_CASES: tuple[Case, ...] = (
    Case("normal", "claude", "oauth", _claude_normal,
         Expect("post", usage=(("five_hour", 0.31),)),
         note="200, unified allowed, 5h 0.31 and 7d 0.12"),
    Case("allowed_warning", "claude", "oauth", _claude_allowed_warning,
         Expect("post", usage=(("five_hour", 0.92),)),
         note="200, unified allowed_warning, claim five_hour, 5h 0.92 past 0.9"),
    Case("five_hour", "claude", "oauth", _claude_five_hour, Expect("limit", "server"),
         note="429 rejected five_hour, reset in 2h13m27s"),
    Case("weekly", "claude", "oauth", _claude_weekly, Expect("limit", "server"),
         note="429 rejected seven_day, reset in 3d5h17m"),
    Case("same_minute", "claude", "oauth", _claude_same_minute, Expect("limit", "probe"),
         note="429 rejected five_hour, reset 20 s ago: refused just after its own reset"),
    Case("throttle", "claude", "oauth",
         _claude_error(429, "rate_limit_error", "Rate limited. Please slow down."),
         Expect("failed"), note="429 without unified headers: a throttle, not a usage limit"),
    Case("overloaded", "claude", "oauth", _claude_error(529, "overloaded_error", "Overloaded"),
         Expect("failed"), note="529 overloaded_error"),
    Case("server_error", "claude", "oauth",
         _claude_error(500, "api_error", "Internal server error"), Expect("failed"),
         note="500 api_error"),
    Case("spend_limit", "claude", "apikey", _claude_spend_limit, Expect("limit", "server"),
         note="400: the API key's spend limit, regained on 2027-01-01 at 00:00 UTC"),
    Case("low_credit", "claude", "apikey",
         _claude_error(400, "invalid_request_error",
                       "Your credit balance is too low to access the Anthropic API. Please go "
                       "to Plans & Billing to upgrade or purchase credits."),
         Expect("limit", "none"), note="400: prepaid credit exhausted, no reset"),
    Case("apikey_normal", "claude", "apikey", _claude_apikey_normal, Expect("post"),
         note="200 with an API key's rate-limit headers"),
)


# -- codex ----------------------------------------------------------------------------------------


def _codex_normal(_now: datetime) -> openai.Reply:
    return openai.Reply()


def _codex_usage_limit(plan: str, resets_at: int | None) -> openai.Reply:
    return openai.Reply(status=429, error=openai.usage_limit(plan, resets_at),
                        true_reset=None if resets_at is None else _at(resets_at))


def _codex_usage_limit_plus(now: datetime) -> openai.Reply:
    return _codex_usage_limit("plus", _epoch(now + timedelta(hours=1, minutes=37, seconds=41)))


def _codex_usage_limit_pro_date(now: datetime) -> openai.Reply:
    return _codex_usage_limit("pro", _epoch(now + timedelta(days=3, hours=2, minutes=11,
                                                            seconds=9)))


def same_minute_reset(now: datetime) -> int:
    """A reset codex prints as the current minute: 25 s ahead when that stays in this minute,
    else 10 s ago (A6: a printed time not after now)."""
    ahead = now + timedelta(seconds=25)
    if ahead.replace(second=0, microsecond=0) == now.replace(second=0, microsecond=0):
        return _epoch(ahead)
    return _epoch(now - timedelta(seconds=10))


def _codex_same_minute(now: datetime) -> openai.Reply:
    return _codex_usage_limit("plus", same_minute_reset(now))


def _codex_no_reset(_now: datetime) -> openai.Reply:
    return _codex_usage_limit("plus", None)


def _codex_insufficient_quota(_now: datetime) -> openai.Reply:
    return openai.Reply(status=429, error={
        "type": "insufficient_quota", "code": "insufficient_quota", "param": None,
        "message": "You exceeded your current quota, please check your plan and billing "
        "details."})


def _codex_rate_limited(_now: datetime) -> openai.Reply:
    return openai.Reply(status=429, headers=(("retry-after", "1"),), error={
        "type": "requests", "code": "rate_limit_exceeded", "param": None,
        "message": "Rate limit reached for gpt-5 on requests per min (RPM): Limit 500, Used "
        "500, Requested 1. Please try again in 1s."})


def _codex_server_error(_now: datetime) -> openai.Reply:
    return openai.Reply(status=500, error={
        "type": "server_error", "code": None, "param": None,
        "message": "The server had an error while processing your request. Sorry about that!"})


def _codex_unavailable(_now: datetime) -> openai.Reply:
    return openai.Reply(status=503, error={
        "type": "server_error", "code": None, "param": None,
        "message": "The engine is currently overloaded, please try again later"})


def _both(name: str, reply: Callable[[datetime], openai.Reply], expect: Expect,
          note: str) -> tuple[Case, Case]:
    """A codex case plain (`exec`, notices on stderr) and with `exec --json` (JSONL events)."""
    return (Case(name, "codex", "key", reply, expect, json=False, note=note),
            Case(f"{name}_json", "codex", "key", reply, expect, json=True,
                 note=f"{note} (--json)"))


CODEX_CASES: tuple[Case, ...] = (
    *_both("normal", _codex_normal, Expect("post"), "200, a streamed answer"),
    *_both("usage_limit_plus", _codex_usage_limit_plus, Expect("limit", "server"),
           "429 usage_limit_reached, plus, resets in 1h37m41s"),
    *_both("usage_limit_pro_date", _codex_usage_limit_pro_date, Expect("limit", "server"),
           "429 usage_limit_reached, pro, resets in 3 days (a full date)"),
    *_both("same_minute", _codex_same_minute, Expect("limit", "probe"),
           "429 usage_limit_reached, resets_at within the current printed minute"),
    *_both("no_reset", _codex_no_reset, Expect("limit", "none"),
           "429 usage_limit_reached without resets_at"),
    *_both("insufficient_quota", _codex_insufficient_quota, Expect("limit", "none"),
           "429 insufficient_quota"),
    *_both("rate_limited", _codex_rate_limited, Expect("failed"),
           "429 rate_limit_exceeded with retry-after 1"),
    *_both("server_error", _codex_server_error, Expect("failed"), "500 server_error"),
    Case("unavailable", "codex", "key", _codex_unavailable, Expect("failed"),
         note="503 Service Unavailable"),
)

CASES: tuple[Case, ...] = CLAUDE_CASES + CODEX_CASES
BY_KEY: dict[str, Case] = {case.key: case for case in CASES}
assert len(BY_KEY) == len(CASES), "case keys must be unique"


def select(names: list[str] | None) -> list[Case]:
    """The cases named (`<cli>-<name>`, or a bare name for every CLI's case of that name);
    all of them when `names` is empty or None."""
    if not names:
        return list(CASES)
    chosen = [c for c in CASES if c.key in names or c.name in names]
    unknown = [n for n in names if n not in BY_KEY and all(c.name != n for c in CASES)]
    if unknown:
        raise KeyError(f"unknown case(s): {', '.join(unknown)} (known: {', '.join(BY_KEY)})")
    return chosen
