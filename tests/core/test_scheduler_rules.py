"""SPEC A8-A43: one test per rule of the turn scheduler, named after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from helpers.scheduler_runs import MINUTE, T0, Run, at, member

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.scheduler import (
    CallEnded,
    SchedulerConfig,
    Sleep,
)

# ------------------------------------------------------------------------------------------------
# A6: default resets


def test_A6_claude_waits_one_hour_when_no_reset_is_readable() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    lines = run.end("limit", reset=None)
    assert lines[0] == "claude limited until 10:01"
    assert run.state.wait_until == at(10, 1)


def test_A6_codex_and_agy_probe_again_after_30_minutes() -> None:
    for provider in ("codex", "agy"):
        run = Run(member("ana", provider))
        run.start()
        assert run.end("limit", reset=None)[0] == f"{provider} limited until 09:31"


def test_A6_a_reset_already_passed_counts_as_unreadable() -> None:
    run = Run(member("ana", "codex"))
    run.start()
    assert run.end("limit", reset=at(8))[0] == "codex limited until 09:31"


# ------------------------------------------------------------------------------------------------
# A8/A9: limits belong to engines


def test_A8_a_limit_is_shared_by_every_participant_on_the_engine() -> None:
    run = Run(member("ana", "claude"), member("bob", "claude"), member("cy", "codex"))
    run.start()
    lines = run.end("limit", reset=at(12))
    assert lines == ["claude limited until 12:00", "ana is rate limited — @cy takes the turn"]
    assert run.runner == ("cy", "codex")


def test_A9_the_pin_does_not_make_an_engine_but_a_chain_model_does() -> None:
    run = Run(member("ana", "claude", "claude:sonnet", model="opus"))
    run.start()
    assert (run.call.engine, run.call.model) == (Engine("claude"), "opus")
    lines = run.end("limit", reset=at(12))
    assert lines == ["claude limited until 12:00", "ana: claude limited → claude:sonnet"]
    assert (str(run.call.engine), run.call.model) == ("claude:sonnet", "sonnet")


# ------------------------------------------------------------------------------------------------
# A10-A13: the participant's chain


def test_A11_chain_walked_in_same_step_past_limited_entries() -> None:
    run = Run(member("ana", "claude", "codex", "agy"), member("bob", "codex"))
    run.start()
    run.end("post")  # ana
    assert run.end("limit", reset=at(12)) == [  # bob on codex
        "codex limited until 12:00",
        "bob is rate limited — @ana takes the turn",
    ]
    assert run.runner == ("ana", "claude")
    lines = run.end("limit", reset=at(11))
    # codex is known limited: the walk skips it in the same step, with one line.
    assert lines == ["claude limited until 11:00", "ana: claude limited → agy"]
    assert run.runner == ("ana", "agy")
    assert run.call.turn_kind == "no-new-input"  # B18: a hop is a new call of the same turn


def test_A12_an_entry_naming_a_missing_cli_is_skipped() -> None:
    run = Run(member("ana", "claude", "codex", "agy"), installed=("claude", "agy"))
    run.start()
    assert run.end("limit", reset=at(12))[1] == "ana: claude limited → agy"


def test_A12_a_participant_with_no_installed_cli_is_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="no installed CLI"):
        SchedulerConfig(team=(member("ana", "codex"),), installed=frozenset({"claude"}))


def test_A13_the_pin_is_dropped_on_a_hop_unless_the_entry_names_a_model() -> None:
    run = Run(member("ana", "claude", "codex", "claude:haiku", model="opus"))
    run.start()
    run.end("limit", reset=at(12))
    assert (str(run.call.engine), run.call.model) == ("codex", None)
    run.end("limit", reset=at(12))
    assert (str(run.call.engine), run.call.model) == ("claude:haiku", "haiku")


# ------------------------------------------------------------------------------------------------
# A15-A17: colleagues, gates, posts


def test_A15_colleague_searched_in_team_order_after_the_due_participant() -> None:
    run = Run(
        member("ana", "agy"), member("bob", "claude"), member("cy", "claude"),
        member("dan", "codex"), member("eve", "agy"),
    )
    run.start()
    run.end("post")  # ana; bob is due
    lines = run.end("limit", reset=at(12))
    # cy shares bob's engine, so dan — the next after bob with a free engine — takes it.
    assert lines[-1] == "bob is rate limited — @dan takes the turn"
    assert run.call.turn_owner == "bob" and run.call.turn_kind == "fresh"
    assert run.end("post") == [
        "dan posted via codex",
        "cy is rate limited — @dan takes the turn",  # cy is due now, and on claude too
    ]
    assert run.state.due == 2


def test_A15_the_turn_owed_moves_on_after_the_colleague_posts() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"), member("cy", "agy"))
    run.start()
    run.end("limit", reset=at(12))  # bob takes ana's turn
    run.end("post")
    assert run.state.due == 1  # A33: the participant after the due one
    assert run.runner == ("bob", "codex")


def test_A16_a_pending_gate_never_hands_its_turn_over() -> None:
    run = Run(member("ana", "claude", gate=True), member("bob", "codex"))
    run.start()
    lines = run.end("limit", reset=at(12))
    assert lines[-1] == "ana cannot hand its turn over — waiting for claude, back at 12:00"
    assert run.state.status == "rate_limited" and run.sleep.until == at(12)


def test_A16_a_team_of_one_uses_only_its_own_chain() -> None:
    run = Run(member("ana", "claude", "codex"))
    run.start()
    run.end("limit", reset=at(12))
    lines = run.end("limit", reset=at(11))
    assert lines[-1] == "every participant limited — waiting for codex, back first at 11:00"


def test_A17_post_then_limit_keeps_the_post_and_routes_around() -> None:
    run = Run(member("ana", "claude", "codex"), member("bob", "claude"), member("cy", "agy"))
    run.start()
    lines = run.end("limit", reset=at(12), posted=True)
    assert lines == [
        "ana posted via claude",
        "claude limited until 12:00",
        "bob is rate limited — @cy takes the turn",
    ]
    assert run.state.due == 1


# ------------------------------------------------------------------------------------------------
# A18-A22: when no one can take the turn


def test_A18_waits_for_the_nearest_reset_among_all_not_the_last_failure() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"), member("cy", "agy"))
    run.start()
    run.end("limit", reset=at(13))
    run.end("limit", reset=at(11))
    lines = run.end("limit", reset=at(14))
    assert lines[-1] == "every participant limited — waiting for codex, back first at 11:00"
    assert run.state.status == "rate_limited"
    assert run.sleep.until == at(11) and not run.sleep.wakes_on_message


def test_A19_a_message_does_not_shorten_a_limit_wait() -> None:
    from autodev_core.scheduler import MessageArrived

    run = Run(member("ana", "claude"))
    run.start()
    run.end("limit", reset=at(12))
    run.now = at(10)
    assert run.feed(MessageArrived(now=run.now)) == [] and run.effects == ()
    assert run.state.status == "rate_limited" and run.state.wait_until == at(12)


def test_A21_sleep_is_not_charged_to_max_runtime() -> None:
    run = Run(member("ana", "claude"), max_runtime=timedelta(minutes=3))
    run.start()
    run.end("limit", reset=at(15))
    run.wake()
    assert run.state.status == "running" and run.state.runtime == MINUTE
    run.end("post")
    lines = run.end("post")
    assert lines[-1] == "Reached max_runtime_min (3 min of calls); run stopped."
    assert run.state.status == "stopped"


def test_A22_a_gate_approved_turn_waits_for_its_own_provider() -> None:
    from autodev_core.scheduler import GateApproved

    run = Run(member("ana", "claude"), member("bob", "codex"), member("cy", "agy"))
    run.start()
    run.end("post")  # ana; bob is due
    run.feed(GateApproved(now=run.now, participant="ana"))  # queued behind bob's call
    run.end("post")  # bob posts; the approved turn of ana comes first
    assert run.runner == ("ana", "claude")
    lines = run.end("limit", reset=at(12))
    assert lines[-1] == "ana cannot hand its turn over — waiting for claude, back at 12:00"
    run.wake()
    assert run.runner == ("ana", "claude")
    run.end("post")
    assert run.runner == ("cy", "agy")  # the owed turn (cy) was kept


def test_A22_with_a_single_engine_and_no_chain_a_limit_is_a_wait() -> None:
    run = Run(member("ana", "claude"), member("bob", "claude"))
    run.start()
    lines = run.end("limit", reset=at(12))
    assert lines[-1] == "every participant limited — waiting for claude, back first at 12:00"


# ------------------------------------------------------------------------------------------------
# A23-A25: the return


def test_A23_lifted_at_turn_start_back_on_primary() -> None:
    run = Run(member("ana", "claude", "codex"), member("bob", "agy"))
    run.start()
    run.end("limit", reset=at(9, 30))
    run.end("post", after=timedelta(minutes=30))  # ana on codex, 09:31
    assert run.runner == ("bob", "agy")
    lines = run.end("post")
    assert lines == ["bob posted via agy", "ana: limit lifted — back on its primary provider"]
    assert run.runner == ("ana", "claude")
    assert all(r.until > run.now for r in run.state.limits)  # lifted from the registry


def test_A23_lifted_back_on_an_earlier_chain_entry() -> None:
    run = Run(member("ana", "claude", "codex", "agy"))
    run.start()
    run.end("limit", reset=at(15))
    run.end("limit", reset=at(9, 30))  # codex; ana goes on to agy
    run.end("post", after=timedelta(minutes=40))
    assert run.all_lines[-1] == "ana: limit lifted — back on codex"
    assert run.runner == ("ana", "codex")


def test_A24_a_turn_start_takes_the_earliest_free_entry_silently() -> None:
    run = Run(member("ana", "claude"), member("bob", "claude", "codex"))
    run.start()
    run.end("limit", reset=at(12), posted=True)  # ana posted, then claude limited
    assert run.all_lines == ["ana posted via claude", "claude limited until 12:00"]
    assert run.runner == ("bob", "codex")  # no "→" line: no call of bob reported it


def test_A25_the_registry_lives_in_the_state() -> None:
    from autodev_core.scheduler import StopRequested

    run = Run(member("ana", "claude", "codex"))
    run.start()
    run.end("limit", reset=at(12))
    run.feed(StopRequested(now=run.now))
    run.end("post")
    run.start()
    assert run.runner == ("ana", "codex")  # the limit is remembered by the state


# ------------------------------------------------------------------------------------------------
# A26, A27, A36, A40: outages


def test_A26_an_outage_takes_the_provider_out_for_every_engine_and_participant() -> None:
    run = Run(member("ana", "claude", "claude:sonnet", "codex"), member("bob", "claude"))
    run.start()
    lines = run.end("network")
    assert lines == [
        "claude could not be reached; trying it again at 09:02",
        "ana: claude unreachable → codex",
    ]
    run.end("post", after=timedelta(seconds=30))  # 09:01:30, before claude's retry time
    # bob (claude) is out too: the handover names the provider (A36).
    assert run.all_lines[-1] == "bob cannot reach claude — @ana takes the turn"
    assert run.runner == ("ana", "codex")


def test_A27_retries_after_1_2_4_8_then_every_15_minutes() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    expected = [1, 2, 4, 8, 15, 15, 15]
    for minutes in expected:
        lines = run.end("network")
        retry = run.now + timedelta(minutes=minutes)
        assert lines[0] == (
            f"claude could not be reached; trying it again at {retry:%H:%M}"
        )
        assert lines[1] == f"No provider can be reached; trying again at {retry:%H:%M}"
        assert run.state.status == "unreachable" and run.sleep.until == retry
        run.wake()
    assert run.end("post") == ["claude is reachable again", "ana posted via claude"]
    assert run.state.outages == ()


def test_A36_outage_handover_line_and_no_lifted_line_on_return() -> None:
    run = Run(member("ana", "claude", "codex"), member("bob", "agy"))
    run.start()
    assert run.end("network")[-1] == "ana: claude unreachable → codex"
    run.end("post", after=timedelta(minutes=5))
    run.end("post")
    assert run.runner == ("ana", "claude")  # the retry time has come: the next call is the retry
    assert not any("lifted" in line for line in run.all_lines)


def test_A40_any_answer_proves_a_provider_reachable() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.end("network")
    run.wake()
    lines = run.end("limit", reset=at(12))
    assert lines[:2] == ["claude is reachable again", "claude limited until 12:00"]


def test_A40_the_A18_line_names_whichever_comes_back_first() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.start()
    run.end("limit", reset=at(12))
    lines = run.end("network")
    assert lines == [
        "codex could not be reached; trying it again at 09:03",
        "every participant limited — waiting for codex, back first at 09:03",
    ]
    assert run.state.status == "rate_limited"


# ------------------------------------------------------------------------------------------------
# A28-A32, A41: failures


def test_A28_backoff_schedule_then_one_hour() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    waits = [timedelta(seconds=1)] + [timedelta(minutes=m) for m in (1, 2, 4, 8, 15, 30, 60, 60)]
    for wait in waits:
        lines = run.end("exit", exit_code=3)
        nxt = run.now + wait
        assert lines == [f"ana failed on claude (claude exited with code 3); next attempt at "
                         f"{nxt:%H:%M}"]
        assert run.state.status == "backing_off" and run.sleep.until == nxt
        assert run.sleep.wakes_on_message
        run.wake()


def test_A28_what_failed_wording() -> None:
    run = Run(member("ana", "codex"))
    run.start()
    assert run.end("timeout")[0].startswith("ana failed on codex (codex timed out)")
    run.wake()
    assert run.end("empty")[0].startswith(
        "ana failed on codex (ana ended the turn without a post)"
    )


def test_A29_A41_the_12th_consecutive_failure_of_anyone_pauses() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.start()
    for _ in range(11):
        run.end("exit", exit_code=2)
        assert run.state.status == "backing_off"
        run.wake()
    lines = run.end("timeout")
    assert lines == [
        "Gave up after 12 failed attempts in a row, over five hours (claude timed out); "
        "run paused — resume to try again."
    ]
    assert run.state.status == "paused"
    assert not [e for e in run.effects if isinstance(e, Sleep)]


def test_A30_a_message_ends_a_failure_wait_at_once() -> None:
    from autodev_core.scheduler import MessageArrived

    run = Run(member("ana", "claude"))
    run.start()
    run.end("exit")
    run.wake()
    run.end("exit")  # 1 minute wait
    run.now += timedelta(seconds=20)
    run.feed(MessageArrived(now=run.now))
    assert run.call.at == run.now and run.call.turn_kind == "fresh"


def test_A30_a_working_call_resets_the_count() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.start()
    run.end("exit")
    run.wake()
    run.end("exit")
    run.wake()
    run.end("post")
    assert run.state.failures == 0
    run.end("exit")
    assert run.sleep.until == run.now + timedelta(seconds=1)  # the first wait again


def test_A30_an_engine_back_before_the_failure_wait_brings_the_attempt_forward() -> None:
    run = Run(member("ana", "claude", "codex"))
    run.start()
    run.end("limit", reset=at(9, 15))
    for _ in range(4):
        run.end("exit")
        run.wake()
    lines = run.end("exit")  # 5th failure at 09:13:01: 8 minutes, but claude is back at 09:15
    assert lines[-1].endswith("next attempt at 09:15")
    assert run.sleep.until == at(9, 15)
    run.wake()
    assert run.runner == ("ana", "claude")


def test_A30_every_attempt_counts_against_max_iterations() -> None:
    run = Run(member("ana", "claude", "codex"), max_iterations=2)
    run.start()
    run.end("exit")
    run.wake()
    run.end("limit", reset=at(12))  # the hop would be call number 3
    assert run.all_lines[-1] == "Reached max_iterations (2 calls); run stopped."
    assert run.state.status == "stopped" and run.state.iterations == 2


def test_A31_the_third_empty_turn_of_one_participant_pauses_at_once() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.start()
    run.end("empty")
    run.wake()
    run.end("exit")  # a crash neither counts nor resets the empty turns
    run.wake()
    run.end("empty")
    run.wake()
    lines = run.end("empty")
    assert lines == ["ana ended 3 turns in a row without a post; run paused — resume to try again."]
    assert run.state.status == "paused"


def test_A31_a_post_resets_the_empty_count() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    for _ in range(2):
        run.end("empty")
        run.wake()
    run.end("post")
    run.end("empty")
    assert run.state.status == "backing_off"


def test_A32_claude_not_logged_in_pauses_at_once() -> None:
    run = Run(member("ana", "claude", "codex"))
    run.start()
    lines = run.end("login", exit_code=1)
    assert lines == ["claude is not logged in (ana); run paused — log in, then resume."]
    assert run.state.status == "paused"


# ------------------------------------------------------------------------------------------------
# A33-A35: turn order


def test_A33_round_robin_and_the_owed_turn_survives_a_wait() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.start()
    run.end("post")
    assert run.runner[0] == "bob"
    run.end("limit", reset=at(10))
    run.end("limit", reset=at(11))  # ana took bob's turn and hit claude's limit
    assert run.state.status == "rate_limited" and run.state.due == 1
    run.wake()
    assert run.runner == ("bob", "codex")


def test_A34_a_failed_turn_is_attempted_again_with_the_engine_chosen_afresh() -> None:
    run = Run(member("ana", "claude", "codex"), member("bob", "claude"))
    run.start()
    run.end("limit", reset=at(9, 3))  # ana hops to codex
    run.end("exit")
    run.wake(at(9, 3))
    assert run.runner == ("ana", "claude")
    assert run.call.turn_kind == "no-new-input"


def test_A35_gate_whose_chain_is_exhausted_waits_for_its_earliest_engine() -> None:
    run = Run(member("ana", "claude", "codex", gate=True), member("bob", "agy"))
    run.start()
    run.end("limit", reset=at(13))
    lines = run.end("limit", reset=at(12))
    assert lines[-1] == "ana cannot hand its turn over — waiting for codex, back at 12:00"
    assert run.state.status == "rate_limited"


# ------------------------------------------------------------------------------------------------
# A38, A39, A42, A43, log times


def test_A38_a_reset_at_t_has_passed_when_now_equals_t() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.end("limit", reset=at(12))
    assert run.wake(at(11, 59)) == [] and run.sleep.until == at(12)
    run.wake(at(12))
    assert run.runner == ("ana", "claude")


def test_A38_the_backoff_is_measured_from_the_end_of_the_failed_call() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.end("exit", after=timedelta(minutes=7))
    assert run.sleep.until == at(9, 7) + timedelta(seconds=1)


def test_A39_learned_before_decided() -> None:
    run = Run(member("ana", "claude", "codex"), member("bob", "agy"))
    run.start()
    run.end("network")
    run.end("post", after=timedelta(minutes=2))
    run.end("post")
    lines = run.end("limit", reset=at(12), posted=True)
    assert lines[:3] == [
        "claude is reachable again", "ana posted via claude", "claude limited until 12:00",
    ]


def test_A42_statuses_follow_the_run() -> None:
    from autodev_core.scheduler import PauseRequested, ResumeRequested, StopRequested

    run = Run(member("ana", "claude"))
    assert run.state.status == "stopped"
    run.start()
    assert run.state.status == "running"
    run.end("exit")
    assert run.state.status == "backing_off"
    run.feed(PauseRequested(now=run.now))
    assert run.state.status == "paused" and run.state.wait_until is None
    run.feed(ResumeRequested(now=run.now))
    assert run.state.status == "running" and run.state.failures == 0
    run.feed(StopRequested(now=run.now))
    assert run.state.status == "stopped"


def test_A43_limits_are_unlimited_unless_set() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    for _ in range(300):
        run.end("post", after=timedelta(hours=1))
    assert run.state.status == "running" and run.state.iterations == 301


def test_log_time_is_hh_mm_on_the_same_local_day_else_the_full_date() -> None:
    run = Run(member("ana", "claude"), timezone="Europe/Lisbon", start=at(22, 30))
    run.start()
    assert run.end("limit", reset=at(23, 50))[0] == "claude limited until 23:50"
    run.wake()
    lines = run.end("limit", reset=datetime(2026, 12, 2, 0, 10, tzinfo=UTC))
    assert lines[0] == "claude limited until 2026-12-02 00:10"


def test_log_time_uses_the_run_zone() -> None:
    run = Run(member("ana", "claude"), timezone="America/New_York")
    run.start()
    assert run.end("limit", reset=at(15))[0] == "claude limited until 10:00"


def test_a_recorded_reset_never_moves_earlier() -> None:
    from autodev_core.scheduler import EngineLimit

    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.start()
    run.end("limit", reset=at(15))
    call = run.state.call
    assert call is not None
    # A stale call ending on the same engine with an earlier reset keeps the later one.
    import attrs

    run.state = attrs.evolve(
        run.state, call=attrs.evolve(call, participant="ana", engine=Engine("claude"))
    )
    run.end("limit", reset=at(11))
    assert [(r.engine, r.until) for r in run.state.limits] == [(Engine("claude"), at(15))]
    assert all(isinstance(r, EngineLimit) for r in run.state.limits)


def test_A22_approving_the_due_participant_makes_its_turn_the_owed_one() -> None:
    from autodev_core.scheduler import GateApproved

    run = Run(member("ana", "claude", gate=True), member("bob", "codex"))
    run.start()
    run.end("limit", reset=at(12))  # ana waits for claude (A35)
    run.now = at(10)
    run.feed(GateApproved(now=run.now, participant="ana"))
    assert run.all_lines[-1] == "ana cannot hand its turn over — waiting for claude, back at 12:00"
    assert "ana" not in run.state.gates and run.state.status == "rate_limited"
    run.wake()
    run.end("post")
    assert run.runner == ("bob", "codex")  # not a second turn of ana


def test_A42_waking_from_a_wait_changes_status_once() -> None:
    from autodev_core.scheduler import StatusChanged

    run = Run(member("ana", "claude"))
    run.start()
    run.end("limit", reset=at(12))
    run.wake()
    assert [e.status for e in run.effects if isinstance(e, StatusChanged)] == ["running"]


# ------------------------------------------------------------------------------------------------
# call_ended: the one summary of a finished call (shared by the shell and the simulation)


def _summary(kind: str, *, posted: bool = False, exit_code: int | None = 0,
             timed_out: bool = False, provider: str = "claude") -> CallEnded:
    from autodev_core.detection.classification import Classification
    from autodev_core.scheduler import call_ended

    limit = LimitNotice(provider, None, "limit") if kind == "limit" else None
    return call_ended(
        T0, "ana", Engine(provider), Classification(kind=kind, limit=limit),  # type: ignore[arg-type]
        posted=posted, exit_code=exit_code, timed_out=timed_out,
    )


def test_A17_a_post_and_a_notice_summarise_as_a_limit_after_a_post() -> None:
    event = _summary("limit", posted=True, exit_code=1)
    assert (event.kind, event.posted) == ("limit", True)


def test_A26_A37_network_output_wins_over_a_timeout() -> None:
    assert _summary("network", exit_code=None, timed_out=True).kind == "network"


def test_A28_other_output_is_a_timeout_an_exit_or_an_empty_turn() -> None:
    assert _summary("other", timed_out=True, exit_code=None).kind == "timeout"
    assert _summary("other", exit_code=3).exit_code == 3
    assert _summary("other", exit_code=3).kind == "exit"
    assert _summary("other", exit_code=0).kind == "empty"
    assert _summary("other", posted=True, exit_code=0).kind == "post"


def test_A32_only_claude_has_a_login_check() -> None:
    assert _summary("login", exit_code=1).kind == "login"
    assert _summary("login", exit_code=1, provider="codex").kind == "exit"
