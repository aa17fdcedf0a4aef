"""What the panel shows of a stored scheduler state (docs/panel.md): the core's values,
arranged — each limit's reset and where it came from (the CLI's notice, A6's default, another
daemon sharing the account), the failover chain's next candidate (A23/A24), outages (A26)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import attrs
import pytest

pytest.importorskip("starlette")

from autodev_core import Engine, SchedulerConfig, initial_state, parse_participant
from autodev_core.scheduler.state import Call, EngineLimit, Outage
from autodev_shell.panel.view import at_text, limits, outages, participants

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)  # summer: Lisbon is WEST
LISBON = ZoneInfo("Europe/Lisbon")


def _state(**changes: object) -> object:
    team = [parse_participant("---\nprovider: claude\nfailover: [codex, agy]\n---\nA.", id="ana"),
            parse_participant("---\nprovider: codex\n---\nR.", id="rui")]
    state = initial_state(SchedulerConfig(team=team, installed=frozenset({"claude", "codex",
                                                                          "agy"}),
                                          timezone="Europe/Lisbon"))
    return attrs.evolve(state, last_event_at=NOW, **changes)


def test_at_text_writes_the_runs_clock_and_zone() -> None:
    assert at_text(datetime(2026, 7, 1, 13, 30, tzinfo=UTC), NOW, LISBON) == "14:30 WEST"
    winter = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert at_text(winter + timedelta(hours=2), winter, LISBON) == "14:00 WET"
    assert at_text(NOW + timedelta(days=1), NOW, LISBON) == "2026-07-02 13:00 WEST"


@pytest.mark.parametrize(("record", "origin", "shared"), [
    ({"read": True}, "read from the CLI's notice", False),
    ({"read": False}, "not said by the CLI: the default wait (A6)", False),
    ({"read": True, "source": "host-b/run"}, "reported by host-b/run (limits shared with --share)",
     True),
])
def test_each_limit_says_where_its_reset_came_from(record: dict[str, object], origin: str,
                                                   shared: bool) -> None:
    until = NOW + timedelta(hours=1, minutes=12)
    state = _state(limits=(EngineLimit(engine=Engine("claude"), until=until, **record),))
    lines = ["2026-07-01T12:00:00 claude limited until 14:12", "2026-07-01T12:00:01 other"]
    (shown,) = limits(state, NOW, LISBON, lines)  # type: ignore[arg-type]
    assert shown["origin"] == origin and shown["shared"] is shared
    assert shown["back_at"] == "back at 14:12 WEST"
    assert shown["until"] == "2026-07-01T13:12:00Z"
    assert shown["notice"] == lines[0] and shown["lanes"] == ["ana"]


def test_a_limit_that_has_passed_is_not_shown() -> None:
    state = _state(limits=(EngineLimit(engine=Engine("claude"), until=NOW),))
    assert limits(state, NOW, LISBON, []) == []  # type: ignore[arg-type]  # A38: now >= until


def test_the_next_candidate_is_the_first_entry_neither_limited_nor_unreachable() -> None:
    state = _state(
        limits=(EngineLimit(engine=Engine("claude"), until=NOW + timedelta(hours=1)),),
        outages=(Outage(provider="codex", retry_at=NOW + timedelta(minutes=1), attempts=1),),
        seats=(1, 0), call=Call(participant="rui", engine=Engine("codex"), started_at=NOW,
                                turn_owner="rui"), due=1,
    )
    ana, rui = participants(state, NOW)  # type: ignore[arg-type]
    assert [(c["engine"], c["limited"], c["unreachable"], c.get("next", False))
            for c in ana["chain"]] == [("claude", True, False, False),
                                       ("codex", False, True, False),
                                       ("agy", False, False, True)]
    assert ana["next"] == 2 and ana["engine"] == "codex" and ana["seat"] == 1
    assert rui["in_call"] and rui["due"] and not ana["due"]
    assert rui["next"] is None  # its only engine is out
    (out,) = outages(state, NOW, LISBON)  # type: ignore[arg-type]
    assert out == {"provider": "codex", "attempts": 1, "retry_at": "2026-07-01T12:01:00Z",
                   "back_at": "next try at 13:01 WEST"}


def test_the_engines_view_says_each_limit_once_with_who_runs_on_the_engine() -> None:
    """Issue 41 item 2: one row per engine of the lanes, in lane order; a limit is its
    engine's, said once, with who runs on it now and whose chains hold it."""
    from autodev_shell.panel.view import engines

    until = NOW + timedelta(minutes=2)
    state = _state(limits=(EngineLimit(engine=Engine("codex"), until=until),),
                   outages=(Outage(provider="agy", retry_at=NOW + timedelta(minutes=1),
                                   attempts=2),))
    people = participants(state, NOW)  # type: ignore[arg-type]
    shown = limits(state, NOW, LISBON, [])  # type: ignore[arg-type]
    rows = engines(state, NOW, LISBON, shown, people)  # type: ignore[arg-type]
    assert [(r["engine"], r["state"], r["runs_on_it"], r["in_chains_of"]) for r in rows] == [
        ("claude", "free", ["ana"], ["ana"]),
        ("codex", "limited", ["rui"], ["ana", "rui"]),
        ("agy", "unreachable", [], ["ana"]),
    ]
    assert rows[1]["limit"]["back_at"] == "back at 13:02 WEST"
    assert rows[2]["outage"] == {"until": "2026-07-01T12:01:00Z", "attempts": 2,
                                 "back_at": "next try at 13:01 WEST"}
