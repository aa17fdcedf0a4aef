"""A shared reset is not trusted blindly (docs/sharing.md "Clocks"; issue 40 item 6).

Two rules, each stated here on its own (not as the code computes it):

- a reader never takes another run's read reset for more than any window of the provider can
  mean: one more than the provider's longest window (7 days) plus A6's grace (10 minutes)
  after it was seen is that run's A6 default after its sighting (claude 1 h, codex/agy 30 min),
  unread — and the merge stays a join with such records in it;
- a writer whose clock is known to be more than the grace off Redis's does not vouch for a reset
  it read from a clock time or a date: it shares it unread, A6's default after the sighting;
  an epoch or a duration, a defaulted reset, or any reset read by a clock within the grace is
  shared as read.
"""

from __future__ import annotations

import json
from datetime import timedelta

from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import Engine
from autodev_core.detection import classify_output
from autodev_core.detection._resets import PAST_GRACE
from autodev_core.scheduler import EngineLimit
from autodev_core.scheduler.registry import (
    TRUST_GRACE,
    believed,
    beyond_any_window,
    merge_limit,
    vouched,
)

M = timedelta(minutes=1)
UTC_ZONE = T0.tzinfo
#: A6 (SPEC): the wait when no reset is read.
A6_DEFAULT = {"claude": 60 * M, "codex": 30 * M, "agy": 30 * M}
#: What the rule allows after a sighting: a week (the longest window) and ten minutes (A6).
ALLOWED = 7 * 24 * 60 + 10  # minutes
ENGINES = (Engine("claude"), Engine("codex"), Engine("agy"))


def at(minutes: int) -> timedelta:
    return minutes * M


@st.composite
def reports(draw: st.DrawFn, *, engine: Engine | None = None,
            sources: tuple[str, ...] = ("laptop", "ci"), seen_by: int = 240,
            soonest: int = 1) -> EngineLimit:
    """Another run's record of one engine: seen in the first `seen_by` minutes, its reset read
    or defaulted, anywhere from `soonest` minutes after the sighting to far past the longest
    window (the boundary itself drawn often)."""
    chosen = engine or draw(st.sampled_from(ENGINES))
    seen = T0 + at(draw(st.integers(0, seen_by)))
    read = draw(st.booleans())
    ahead = draw(st.one_of(st.integers(soonest, 300), st.sampled_from(
        (ALLOWED - 1, ALLOWED, ALLOWED + 1, 24 * 60, 365 * 24 * 60)),
        st.integers(soonest, 2 * ALLOWED)))
    until = seen + (at(ahead) if read else A6_DEFAULT[chosen.provider])
    return EngineLimit(chosen, until, read, seen, draw(st.sampled_from(sources)))


# -- the reader --------------------------------------------------------------------------------


@given(reports())
def test_a_read_reset_past_the_longest_window_is_its_a6_default_after_the_sighting(
    record: EngineLimit,
) -> None:
    taken = believed(record)
    assert record.seen is not None
    if record.read and record.until - record.seen > at(ALLOWED):
        assert taken == EngineLimit(record.engine, record.seen + A6_DEFAULT[record.engine.provider],
                                    False, record.seen, record.source)
        assert beyond_any_window(record)
    else:
        assert taken == record
        assert not beyond_any_window(record) or not record.read
    assert believed(taken) == taken  # once taken, taken


@given(reports())
def test_this_runs_own_reading_is_never_doubted(record: EngineLimit) -> None:
    own = EngineLimit(record.engine, record.until, record.read, record.seen, "")
    assert believed(own) == own
    assert merge_limit(None, own, T0) == own


@given(st.lists(reports(engine=Engine("claude")), min_size=1, max_size=6))
def test_no_report_of_another_run_benches_an_engine_past_a_week_after_its_last_sighting(
    seen: list[EngineLimit],
) -> None:
    record: EngineLimit | None = None
    for report in seen:
        record = merge_limit(record, report, T0)
    assert record is not None and record.seen is not None
    latest = max(r.seen for r in seen if r.seen is not None)
    assert record.until - latest <= at(ALLOWED)


@given(
    misread=reports(engine=Engine("claude")),
    right_after=st.integers(1, 59), right_ahead=st.integers(1, 300), first=st.booleans(),
)
def test_a_right_reading_during_a_doubted_ones_default_wins_in_either_order(
    misread: EngineLimit, right_after: int, right_ahead: int, first: bool,
) -> None:
    """One run misread claude's reset as next year's; another read it right while the first's
    default hour ran: every run ends with the right reading, whichever arrived first."""
    assert misread.seen is not None
    bogus = EngineLimit(misread.engine, misread.seen + timedelta(days=365), True, misread.seen,
                        "fast")
    right = EngineLimit(misread.engine, misread.seen + at(right_after + right_ahead), True,
                        misread.seen + at(right_after), "right")
    now = misread.seen + at(right_after)
    merged = (merge_limit(merge_limit(None, right, now), bogus, now) if first
              else merge_limit(merge_limit(None, bogus, now), right, now))
    assert merged == right


#: Records of one limit: every one seen (in the first half hour) before any ends.
CLAUDE_REPORTS = reports(engine=Engine("claude"), sources=("", "laptop", "ci"), seen_by=30,
                         soonest=31)


@given(CLAUDE_REPORTS, CLAUDE_REPORTS, CLAUDE_REPORTS, st.integers(0, 300))
def test_the_merge_is_still_a_join_with_doubted_records_in_it(
    a: EngineLimit, b: EngineLimit, c: EngineLimit, now_minutes: int,
) -> None:
    now = T0 + at(now_minutes)
    m = lambda x, y: merge_limit(x, y, now)  # noqa: E731
    assert m(a, b) == m(b, a)
    assert m(m(a, b), c) == m(a, m(b, c))
    assert m(a, a) == believed(a)
    assert m(m(a, b), b) == m(a, b)


# -- the writer --------------------------------------------------------------------------------


FORMS = ("epoch", "relative", "clock", "date", None)


@given(
    record=reports(sources=("",)),
    form=st.sampled_from(FORMS),
    skew=st.one_of(st.none(), st.integers(-3600, 3600).map(lambda s: timedelta(seconds=s)),
                   st.sampled_from([timedelta(minutes=10), -timedelta(minutes=10),
                                    timedelta(minutes=10, seconds=1)])),
)
def test_a_clock_off_by_more_than_the_grace_vouches_for_no_reset_it_read_on_that_clock(
    record: EngineLimit, form: str | None, skew: timedelta | None,
) -> None:
    shared = vouched(record, form, skew, T0)
    off = skew is not None and abs(skew) > timedelta(minutes=10)
    on_its_clock = form in ("clock", "date")
    assert record.seen is not None
    if record.read and off and on_its_clock:
        assert shared == EngineLimit(record.engine,
                                     record.seen + A6_DEFAULT[record.engine.provider], False,
                                     record.seen, "")
    else:
        assert shared == record


def test_the_issues_fast_clock_shares_the_default_hour_not_tomorrow() -> None:
    """Issue 40 item 6, past A6's grace: a clock 20 minutes fast reads `resets 9:05am` at its
    09:20 as tomorrow's 09:05; it keeps that reading itself and shares 10:20 (its default hour,
    on its own clock), unread."""
    now = T0.replace(hour=9, minute=20)
    out = classify_output("claude", stdout="You've hit your limit · resets 9:05am (UTC)",
                          now=now, local_tz=UTC_ZONE)
    notice = out.limit
    assert notice is not None and notice.reset_form == "clock"
    assert notice.reset_at == now.replace(minute=5) + timedelta(days=1)
    own = EngineLimit(Engine("claude"), notice.reset_at, True, now, "")
    assert vouched(own, notice.reset_form, timedelta(minutes=20), now) == EngineLimit(
        Engine("claude"), now + timedelta(hours=1), False, now, "")
    assert vouched(own, notice.reset_form, timedelta(minutes=9), now) == own


def test_the_grace_is_a6s() -> None:
    assert TRUST_GRACE == PAST_GRACE == timedelta(minutes=10)


def test_a_notice_says_how_its_reset_was_written() -> None:
    now = T0.replace(hour=9, minute=0)
    written = {
        "You've hit your limit · resets 2:30pm (Europe/Lisbon)": "clock",
        "You've hit your limit · resets Oct 31, 9am": "date",
        "Usage limit reached. Try again in 40 minutes.": "relative",
        f"You've hit your usage limit. Try again at {(now + timedelta(days=30)):%b %d, %Y} "
        "6:49 AM.": "date",
        f"Claude AI usage limit reached|{int((now + timedelta(hours=2)).timestamp())}": "epoch",
        json.dumps({"type": "rate_limit_event", "rate_limit_info": {
            "status": "rejected", "resetsAt": int((now + timedelta(hours=2)).timestamp()),
            "rateLimitType": "five_hour"}}): "epoch",
        "You've hit your limit · resets tomorrow at 9am": "date",
        "You've hit your limit · resets Sun 11:00 PM": "date",
        "You've hit your limit · resets 2026-12-02T10:00:00Z": "date",
        "You've hit your limit · try again in 2h31m33s": "relative",
        "Claude AI usage limit reached": None,
    }
    for text, form in written.items():
        notice = classify_output("claude", stdout=text, now=now, local_tz=UTC_ZONE).limit
        assert notice is not None and notice.reset_form == form, text
