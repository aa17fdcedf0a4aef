"""`limited.lifted_at_reset`: which limits a step took out of the registry at their reset, the
daemon's `<engine> limit lifted at its reset — back for everyone on it` line (docs/loop.md, A23).

The decision is the core's; the daemon only writes the line (it is not one of the SPEC's A or C
messages, so `autodev simulate`'s output, SPEC D, never shows it). Stated on its own, over the
shipped state machine's random runs:

- an engine named was limited before the step and its reset had come (A38: `now >= until`);
- after the step it has no record, so no lane entry of it is limited any more;
- a limit that is still live, or one replaced by a newer limit of the same engine, is never
  named; and a record, once named, is never named again (it is gone).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import settings

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallEnded,
    Event,
    LimitCleared,
    SchedulerConfig,
    SchedulerState,
    Woke,
    initial_state,
    step,
)
from autodev_core.scheduler.events import RunStarted
from autodev_core.scheduler.limited import lifted_at_reset, limited_at
from autodev_core.testing import SchedulerMachine, scheduler_configs

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
CLAUDE = Engine("claude")


class LiftedLines(SchedulerMachine):
    configs = scheduler_configs(max_team=2, limited_iterations=False)

    def feed(self, event: Event) -> tuple[object, ...]:  # type: ignore[override]
        before = self.s
        effects = super().feed(event)
        after = self.s
        named = lifted_at_reset(before.limits, after.limits, event.now)
        assert len(set(named)) == len(named)
        was = {record.engine: record for record in before.limits}
        for engine in named:
            assert engine in was and was[engine].until <= event.now  # its reset had come
            assert all(record.engine != engine for record in after.limits)
            assert engine not in limited_at(after.config, after.limits, event.now).back
        for record in after.limits:
            assert record.engine not in named  # still limited (live, or a newer limit)
        for record in before.limits:
            if record.until > event.now:
                assert record.engine not in named  # a live limit is never said lifted
        return effects


TestLiftedLines = LiftedLines.TestCase
# The shipped machine's own runs cover the rest; a third of the profile keeps this cheap.
TestLiftedLines.settings = settings(settings.default, max_examples=max(
    1, (settings.default.max_examples or 100) // 3))


def _claude_limited(until: timedelta) -> SchedulerState:
    """ana alone on claude (no chain), limited until NOW + `until`: the run waits (A18)."""
    config = SchedulerConfig(team=(Participant(id="ana", provider="claude"),))
    state, _ = step(initial_state(config), RunStarted(now=NOW))
    notice = LimitNotice(provider="claude", reset_at=NOW + until, text="limit")
    state, _ = step(state, CallEnded(now=NOW, participant="ana", engine=CLAUDE, kind="limit",
                                     limit=notice))
    assert state.status == "rate_limited"
    return state


def test_a_wake_at_the_reset_names_the_engine_once() -> None:
    state = _claude_limited(timedelta(hours=5))
    reset = NOW + timedelta(hours=5)
    new, _ = step(state, Woke(now=reset))
    assert lifted_at_reset(state.limits, new.limits, reset) == (CLAUDE,)
    later, _ = step(new, CallEnded(now=reset + timedelta(minutes=1), participant="ana",
                                   engine=CLAUDE, kind="post", posted=True))
    assert lifted_at_reset(new.limits, later.limits, reset + timedelta(minutes=1)) == ()


def test_a_limit_cleared_by_hand_before_its_reset_is_not_lifted_at_its_reset() -> None:
    state = _claude_limited(timedelta(hours=5))
    at = NOW + timedelta(minutes=5)
    new, _ = step(state, LimitCleared(now=at, engine=CLAUDE))
    assert not new.limits
    assert lifted_at_reset(state.limits, new.limits, at) == ()


def test_a_newer_limit_of_the_same_engine_is_not_a_lift() -> None:
    """claude's limit ended at R; the call at R is refused again: the record is replaced by a
    new limit (A38), not lifted."""
    state = _claude_limited(timedelta(hours=5))
    reset = NOW + timedelta(hours=5)
    woke, _ = step(state, Woke(now=reset))
    assert woke.call is not None
    refused = LimitNotice(provider="claude", reset_at=reset + timedelta(hours=5), text="limit")
    new, _ = step(woke, CallEnded(now=reset, participant="ana", engine=CLAUDE, kind="limit",
                                  limit=refused))
    assert [r.engine for r in new.limits] == [CLAUDE]
    assert lifted_at_reset(woke.limits, new.limits, reset) == ()
