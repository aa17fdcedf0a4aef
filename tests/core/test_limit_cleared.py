"""`LimitCleared`: the operator lifts an engine's limit by hand (`autodev limits clear`,
docs/cli.md, "See and undo a limit").

The property rides on the shipped state machine (`autodev_core.testing.SchedulerMachine`, every
SPEC A invariant checked after each step) with one more rule: at any moment, clear the limit of
an engine of the team (or of a provider alone, which also ends its outage). After it:

- the engine has no record in the registry, and every other record is as it was (A8: a limit
  belongs to its engine; clearing `claude:opus` never touches `claude`);
- a provider alone also loses its outage; an engine with a model leaves outages as they were;
- a call in flight is not touched (A24); paused and stopped runs only change the registry;
- a limit or outage wait is decided afresh when the registry changed: when it is still a wait,
  the owner has no free entry (else its turn would have started, A23); when nothing changed, or
  in a failure wait (A28), the wait goes on, unchanged and unsaid;
- exactly one `cleared` line is written, saying whether there was anything to clear.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import precondition, rule

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallEnded,
    LimitCleared,
    Log,
    SchedulerConfig,
    Sleep,
    StartCall,
    initial_state,
    next_entries,
    step,
)
from autodev_core.scheduler.events import RunStarted
from autodev_core.testing import SchedulerMachine, scheduler_configs

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


class ClearedByHand(SchedulerMachine):
    configs = scheduler_configs(max_team=2, limited_iterations=False)

    @precondition(lambda self: self.state is not None)
    @rule(data=st.data(), provider_alone=st.booleans())
    def clear(self, data: st.DataObject, provider_alone: bool) -> None:
        before = self.s
        engines = sorted({e for lane in before.config.lanes for e in lane})
        # Mostly what is out now: an engine limited, a provider unreachable.
        out = sorted({r.engine for r in before.limits}
                     | {Engine(o.provider) for o in before.outages})
        engine = data.draw(st.sampled_from(out) if out and data.draw(
            st.integers(0, 3), label="pick") else st.sampled_from(engines),
            label="cleared engine")
        if provider_alone:
            engine = Engine(engine.provider)
        effects = self.feed(LimitCleared(now=self.now, engine=engine))
        if engine.model is None:
            # The outage is gone (A26/A27): the next failure to reach the provider starts the
            # retry series again (sweep seed 1607714016 found the model still counting).
            self.outage_attempts[engine.provider] = 0
        after = self.s
        assert all(r.engine != engine for r in after.limits)
        assert [r for r in before.limits if r.engine != engine] == list(after.limits)
        if engine.model is None:
            assert [o for o in before.outages if o.provider != engine.provider] == list(
                after.outages)
        else:
            assert after.outages == before.outages
        if before.call is not None:  # A24
            assert after.call == before.call and after.status == before.status
            assert not any(isinstance(e, (StartCall, Sleep)) for e in effects)
        if before.status in ("paused", "stopped"):
            assert after.status == before.status and after.call == before.call
            assert not any(isinstance(e, (StartCall, Sleep)) for e in effects)
        if before.status == "backing_off":
            assert after.status == "backing_off" and after.wait_until == before.wait_until
        changed = after.limits != before.limits or after.outages != before.outages
        if not changed or before.status not in ("rate_limited", "unreachable"):
            assert (after.status, after.wait_until) == (before.status, before.wait_until)
            assert [type(e) for e in effects] == [Log]
        if changed and before.status in ("rate_limited", "unreachable") and after.status in (
                "rate_limited", "unreachable") and before.call is None:
            owner = after.due if after.approved is None else after.config.index[after.approved]
            if len(after.config.team) == 1 or after.approved is not None or (
                    after.config.team[owner].id in after.gates):
                assert next_entries(after, self.now)[owner] is None
            else:  # A18: nobody could take the turn
                assert all(entry is None for entry in next_entries(after, self.now))
        lines = [e for e in effects if isinstance(e, Log) and e.kind == "cleared"]
        assert len(lines) == 1
        assert lines[0].engine == engine
        assert ("back for everyone on it" in lines[0].message) == changed


TestClearedByHand = ClearedByHand.TestCase
# The shipped machine's own runs (tests/core/test_scheduler_stateful.py) cover the rest of the
# rules; a third of the profile's examples keeps this one cheap (common.md: under a minute).
TestClearedByHand.settings = settings(settings.default, max_examples=max(
    1, (settings.default.max_examples or 100) // 3))


def _limited_team() -> tuple[SchedulerConfig, object]:
    """ana on claude then codex, rui on codex: claude limited for five hours, then codex."""
    config = SchedulerConfig(team=(
        Participant(id="ana", provider="claude", failover=(Engine("codex"),)),
        Participant(id="rui", provider="codex"),
    ))
    state, _ = step(initial_state(config), RunStarted(now=NOW))
    notice = LimitNotice(provider="claude", reset_at=NOW + timedelta(hours=5),
                         text="limit")
    state, _ = step(state, CallEnded(now=NOW, participant="ana", engine=Engine("claude"),
                                     kind="limit", limit=notice))
    return config, state


def test_clearing_a_limit_in_a_limit_wait_starts_the_turn_on_it_at_once() -> None:
    """Every engine limited: the run waits (A18); clearing claude's limit starts ana's turn on
    claude at once, with the line saying so."""
    _config, state = _limited_team()
    assert state.call is not None and state.call.engine == Engine("codex")
    notice = LimitNotice(provider="codex", reset_at=NOW + timedelta(hours=2),
                         text="limit")
    state, _ = step(state, CallEnded(now=NOW, participant="ana", engine=Engine("codex"),
                                     kind="limit", limit=notice))
    assert state.status == "rate_limited"
    later = NOW + timedelta(minutes=5)
    state, effects = step(state, LimitCleared(now=later, engine=Engine("claude")))
    assert next(e.message for e in effects if isinstance(e, Log)) == (
        "claude limit cleared by hand — back for everyone on it")
    starts = [e for e in effects if isinstance(e, StartCall)]
    assert state.status == "running"
    assert [(s.participant, str(s.engine)) for s in starts] == [("ana", "claude")]
    assert [str(r.engine) for r in state.limits] == ["codex"]


def test_A26_clearing_a_provider_ends_its_outage_wait_and_the_turn_starts_on_it() -> None:
    config = SchedulerConfig(team=(Participant(id="ana", provider="codex"),))
    state, _ = step(initial_state(config), RunStarted(now=NOW))
    state, _ = step(state, CallEnded(now=NOW, participant="ana", engine=Engine("codex"),
                                     kind="network"))
    assert state.status == "unreachable" and state.outages
    state, effects = step(state, LimitCleared(now=NOW, engine=Engine("codex")))
    assert state.status == "running" and not state.outages
    assert next(e.message for e in effects if isinstance(e, Log)) == (
        "codex limit cleared by hand — back for everyone on it")
    assert [str(e.engine) for e in effects if isinstance(e, StartCall)] == ["codex"]


def test_clearing_an_engine_with_no_limit_says_so_and_changes_nothing() -> None:
    _config, state = _limited_team()
    new, effects = step(state, LimitCleared(now=NOW, engine=Engine("codex", "gpt-5")))
    assert new.limits == state.limits and new.call == state.call
    assert [e.message for e in effects] == ["codex:gpt-5 limit cleared by hand — it had none"]


def test_A8_clearing_an_engine_with_a_model_leaves_the_provider_alone_limited() -> None:
    _config, state = _limited_team()
    new, _ = step(state, LimitCleared(now=NOW, engine=Engine("claude", "opus")))
    assert [str(r.engine) for r in new.limits] == ["claude"]
