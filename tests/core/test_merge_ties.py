"""Full ties in the shared registry's merges (docs/sharing.md; `registry.merge_limit`,
`registry.merge_usage`): two records of one limit with the same reset (and both read or both
defaulted, A6), or two usage readings of one window equal in every ranked field, differ only
in who saw them (`source`: empty for this run) or when (`seen`). The merge must still be a
join — commutative, associative, idempotent — so which run's record arrives first never
decides what every run ends with (the Redis script runs the same rule server-side). The
tie-break is a total order: this run's own record, then the smaller source name, then (for a
limit) the earlier sighting; for a reading, then the higher threshold said.

The generators here draw nothing but ties, which the wider properties of
tests/core/test_sharing_core.py and tests/core/test_usage_merge.py reach only by chance."""

from __future__ import annotations

from datetime import timedelta

from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import Engine
from autodev_core.scheduler import EngineLimit, EngineUsage
from autodev_core.scheduler.registry import merge_limit, merge_usage

M = timedelta(minutes=1)
CLAUDE = Engine("claude")
#: When the records are joined: every limit below is still in force (ends at 60 or 90 min).
NOW = T0 + 10 * M
SOURCES = ("", "ci", "laptop")


# -- merge_limit ---------------------------------------------------------------------------------


def limit(seen: int, source: str, until: int = 60, read: bool = True) -> EngineLimit:
    return EngineLimit(CLAUDE, T0 + until * M, read=read, seen=T0 + seen * M, source=source)


@st.composite
def tied_limits(draw: st.DrawFn) -> tuple[EngineLimit, EngineLimit, EngineLimit]:
    """Three records of one limit with one reset and one `read`, seen before it ended."""
    until = draw(st.sampled_from((60, 90)))
    read = draw(st.booleans())
    return tuple(  # type: ignore[return-value]
        limit(draw(st.integers(0, 10)), draw(st.sampled_from(SOURCES)), until, read)
        for _ in range(3)
    )


def test_a_limit_tie_goes_to_this_runs_own_record_whichever_arrives_first() -> None:
    own, peer = limit(5, ""), limit(3, "laptop")
    assert merge_limit(own, peer, NOW) == own
    assert merge_limit(peer, own, NOW) == own


def test_a_limit_tie_between_peers_goes_to_the_smaller_source_name() -> None:
    ci, laptop = limit(5, "ci"), limit(3, "laptop")
    assert merge_limit(ci, laptop, NOW) == ci
    assert merge_limit(laptop, ci, NOW) == ci


def test_a_limit_tie_from_one_source_goes_to_the_earlier_sighting() -> None:
    early, late = limit(2, "laptop"), limit(7, "laptop")
    assert merge_limit(early, late, NOW) == early
    assert merge_limit(late, early, NOW) == early


@given(records=tied_limits())
def test_merge_limit_is_a_join_on_full_ties(
    records: tuple[EngineLimit, EngineLimit, EngineLimit],
) -> None:
    a, b, c = records
    assert merge_limit(a, a, NOW) == a
    assert merge_limit(a, b, NOW) == merge_limit(b, a, NOW)
    assert merge_limit(merge_limit(a, b, NOW), c, NOW) == merge_limit(
        a, merge_limit(b, c, NOW), NOW)
    winner = min(records, key=lambda r: (r.source != "", r.source, r.seen))
    assert merge_limit(merge_limit(a, b, NOW), c, NOW) == winner


# -- merge_usage ---------------------------------------------------------------------------------


def reading(source: str, threshold: float | None = None, seen: int = 5) -> EngineUsage:
    return EngineUsage(CLAUDE, 0.97, "five_hour", T0 + 60 * M, read=True, seen=T0 + seen * M,
                       source=source, threshold=threshold)


@st.composite
def tied_readings(draw: st.DrawFn) -> tuple[EngineUsage, EngineUsage, EngineUsage]:
    """Three readings of one window, equal in sighting, utilization, window end and `read`
    (live or reset alike at `NOW`); who saw them and the threshold said are drawn."""
    seen = draw(st.integers(0, 10))
    until = T0 + draw(st.sampled_from((5, 60))) * M
    utilization = draw(st.sampled_from((0.5, 0.97)))
    read = draw(st.booleans())
    return tuple(  # type: ignore[return-value]
        EngineUsage(CLAUDE, utilization, "five_hour", until, read=read, seen=T0 + seen * M,
                    source=draw(st.sampled_from(SOURCES)),
                    threshold=draw(st.sampled_from((None, 0.75, 0.9))))
        for _ in range(3)
    )


def test_a_reading_tie_goes_to_this_runs_own_whichever_arrives_first() -> None:
    own, peer = reading(""), reading("laptop")
    assert merge_usage(own, peer, NOW) == own
    assert merge_usage(peer, own, NOW) == own


def test_a_reading_tie_between_peers_goes_to_the_smaller_source_name() -> None:
    ci, laptop = reading("ci"), reading("laptop")
    assert merge_usage(ci, laptop, NOW) == ci
    assert merge_usage(laptop, ci, NOW) == ci


def test_a_reading_tie_from_one_source_goes_to_the_higher_threshold_said() -> None:
    said, unsaid = reading("laptop", 0.9), reading("laptop", None)
    assert merge_usage(said, unsaid, NOW) == said
    assert merge_usage(unsaid, said, NOW) == said


@given(records=tied_readings())
def test_merge_usage_is_a_join_on_full_ties(
    records: tuple[EngineUsage, EngineUsage, EngineUsage],
) -> None:
    a, b, c = records
    assert merge_usage(a, a, NOW) == a
    assert merge_usage(a, b, NOW) == merge_usage(b, a, NOW)
    assert merge_usage(merge_usage(a, b, NOW), c, NOW) == merge_usage(
        a, merge_usage(b, c, NOW), NOW)
    winner = min(records, key=lambda r: (
        r.source != "", r.source, 1.0 if r.threshold is None else -r.threshold))
    assert merge_usage(merge_usage(a, b, NOW), c, NOW) == winner
