"""The call ledger (docs/timeline.md, Where it is read from; C8): a line per ended call in the run
folder, so the timeline's figures count every call of a run whose lanes were trimmed; a run
without one reads as before (its lanes); a cut line is skipped; a full disk is said once."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from autodev_core.detection.classification import OUTPUT_KINDS, Classification, LimitNotice
from autodev_shell.calls.lanes import Lanes
from autodev_shell.calls.ledger import (
    LEDGER_FILE,
    CallLedger,
    ledger_for,
    outcome,
    read_ledger,
)
from autodev_shell.calls.run import CallResult
from autodev_shell.story import Call, parse_lane, read_calls, run_calls, run_story

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
CLAUDE_RESULT = ('{"type":"result","subtype":"success","is_error":false,"result":"ok",'
                 '"total_cost_usd":%s}\n')


def result(start: datetime, *, seconds: float = 30.0, post: str | None = "ok", stdout: str = "",
           stderr: str = "", kind: str = "other", timed_out: bool = False,
           stopped_early: bool = False, cancelled: bool = False,
           reset: datetime | None = None) -> CallResult:
    limit = LimitNotice("claude", reset, "You've hit your limit") if kind == "limit" else None
    return CallResult(
        provider="claude", argv=("claude", "-p", "SECRET PROMPT"), started_at=start,
        ended_at=start + timedelta(seconds=seconds), exit_code=0, stdout=stdout, stderr=stderr,
        stdout_bytes=len(stdout), stderr_bytes=len(stderr), timed_out=timed_out,
        stopped_early=stopped_early, cancelled=cancelled,
        classification=Classification(kind, limit),  # type: ignore[arg-type]
        post=post, pid=None)


def one_call(lanes: Lanes, ledger: CallLedger | None, who: str, engine: str,
             res: CallResult) -> None:
    """A call as the daemon writes it: the lane's header, the output, the footer, the ledger."""
    lanes.begin_call(who, engine=engine, argv=["claude", "-p", "x"], at=res.started_at)
    lanes.append(who, res.stdout + res.stderr)
    lanes.end_call(who, res)
    if ledger is not None:
        ledger.add(who, engine, res)


@given(post=st.sampled_from([None, "ok"]), kind=st.sampled_from(OUTPUT_KINDS),
       timed_out=st.booleans(), stopped_early=st.booleans(), cancelled=st.booleans(),
       cost=st.one_of(st.none(), st.decimals(0, 100, places=6).map(str)),
       tokens=st.one_of(st.none(), st.integers(0, 10**9)),
       reset=st.sampled_from([None, T0 + timedelta(hours=2)]))
def test_the_ledger_reads_a_call_as_its_lane_does(
    tmp_path_factory: object, post: str | None, kind: str, timed_out: bool, stopped_early: bool,
    cancelled: bool, cost: str | None, tokens: int | None, reset: datetime | None,
) -> None:
    """C8: the ledger's outcome, cost and tokens are the lane's, for any way a call ends."""
    stdout = CLAUDE_RESULT % cost if cost is not None else "plain\n"
    stderr = f"codex\nok\ntokens used\n{tokens:,}\n" if tokens is not None else ""
    res = result(T0, post=post, stdout=stdout, stderr=stderr, kind=kind, timed_out=timed_out,
                 stopped_early=stopped_early, cancelled=cancelled, reset=reset)
    folder = tmp_path_factory.mktemp("run")  # type: ignore[attr-defined]
    lanes = Lanes(folder / "lanes")
    ledger = CallLedger(folder / LEDGER_FILE, say=lambda line: None)
    one_call(lanes, ledger, "ana", "claude", res)
    (from_lane,) = parse_lane(lanes.read("ana"))
    entries = read_ledger(folder / LEDGER_FILE)
    assert entries is not None and len(entries) == 1
    assert (entries[0].outcome, entries[0].cost_usd, entries[0].tokens) == (
        from_lane.outcome, from_lane.cost_usd, from_lane.tokens)
    assert entries[0].outcome == outcome(res)


def test_a_line_per_call_private_and_without_prompt_or_output(tmp_path: Path) -> None:
    ledger = CallLedger(tmp_path / LEDGER_FILE, say=lambda line: None)
    old = os.umask(0o022)
    try:
        ledger.add("ana", "claude:opus", result(T0, post="THE POST", stdout=CLAUDE_RESULT
                                                % "0.0421" + "OPENAI_API_KEY=sk-abcdefghijkl\n"))
    finally:
        os.umask(old)
    text = (tmp_path / LEDGER_FILE).read_text("utf-8")
    assert stat.S_IMODE((tmp_path / LEDGER_FILE).stat().st_mode) == 0o600
    assert json.loads(text) == {
        "participant": "ana", "engine": "claude:opus", "start": T0.isoformat(),
        "end": (T0 + timedelta(seconds=30)).isoformat(), "outcome": "posted",
        "cost_usd": 0.0421, "tokens": None}
    assert "SECRET" not in text and "sk-" not in text and "THE POST" not in text
    assert len(text.encode()) < 200  # docs/timeline.md: under 200 bytes a call


def test_trimmed_lanes_still_count_every_call_and_its_cost(tmp_path: Path) -> None:
    """C8: lanes keep their last bytes (here 4 KB a file); the ledger keeps every call."""
    lanes = Lanes(tmp_path / "lanes", max_bytes=4096, files=2)
    ledger = CallLedger(tmp_path / LEDGER_FILE, say=lambda line: None)
    chatter = "x" * 1500 + "\n"
    for i in range(40):
        start = T0 + timedelta(minutes=i)
        one_call(lanes, ledger, "ana", "claude", result(start, stdout=chatter + CLAUDE_RESULT
                                                        % "0.25"))
        one_call(lanes, ledger, "rui", "codex", result(start + timedelta(seconds=40),
                 seconds=10, post=None, stderr=chatter + "tokens used\n1,000\n"))
    assert len([c for c in read_calls(tmp_path / "lanes") if c.participant == "ana"]) < 10
    stats = {s.participant: s for s in run_story(tmp_path).stats()}
    assert (stats["ana"].calls, stats["ana"].cost_usd, stats["ana"].seconds_in_calls) == (
        40, 10.0, 1200.0)
    assert (stats["rui"].calls, stats["rui"].tokens, stats["rui"].seconds_in_calls) == (
        40, 40_000, 400.0)


def test_a_run_without_a_ledger_reads_its_lanes_as_before(tmp_path: Path) -> None:
    lanes = Lanes(tmp_path / "lanes")
    for i in range(3):
        one_call(lanes, None, "ana", "claude", result(T0 + timedelta(minutes=i),
                                                      stdout=CLAUDE_RESULT % "0.5"))
    assert not (tmp_path / LEDGER_FILE).exists()
    assert run_calls(tmp_path) == read_calls(tmp_path / "lanes")
    assert [(c.outcome, c.cost_usd) for c in run_calls(tmp_path)] == [("posted", 0.5)] * 3


def test_the_lanes_add_what_the_ledger_lacks_and_a_cut_line_is_skipped(tmp_path: Path) -> None:
    """The call in flight, and a call whose ledger line the disk did not take, come from the
    lanes; a call in both is counted once (the lane's footer has the end to the second); a
    partial last line (a crash mid-write) is skipped, no error."""
    lanes = Lanes(tmp_path / "lanes")
    ledger = CallLedger(tmp_path / LEDGER_FILE, say=lambda line: None)
    t0 = T0 + timedelta(microseconds=750_000)
    one_call(lanes, ledger, "ana", "claude", result(t0, stdout=CLAUDE_RESULT % "1"))
    one_call(lanes, None, "ana", "claude", result(t0 + timedelta(minutes=1),  # not in the ledger
                                                  stdout=CLAUDE_RESULT % "2"))
    one_call(lanes, ledger, "ana", "claude", result(t0 + timedelta(minutes=2),
                                                    stdout=CLAUDE_RESULT % "4"))
    lanes.begin_call("ana", engine="claude", argv=["claude"], at=T0 + timedelta(minutes=3))
    with (tmp_path / LEDGER_FILE).open("a", encoding="utf-8") as cut:
        cut.write('{"participant": "ana", "engine": "claude", "start": "2026-12-07T09:0')
    calls = run_calls(tmp_path)
    assert [(c.start - T0, c.outcome, c.cost_usd) for c in calls] == [
        (timedelta(microseconds=750_000), "posted", 1.0), (timedelta(minutes=1), "posted", 2.0),
        (timedelta(minutes=2, microseconds=750_000), "posted", 4.0),
        (timedelta(minutes=3), "open", None)]
    assert calls[0] == Call("ana", "claude", t0, t0 + timedelta(seconds=30), "posted", 1.0, None)


def test_a_ledger_the_disk_refuses_is_said_once_and_never_stops_the_call(tmp_path: Path) -> None:
    said: list[str] = []
    path = tmp_path / LEDGER_FILE
    path.mkdir()  # cannot be opened for writing, as a full disk refuses a write
    ledger = CallLedger(path, say=said.append)
    ledger.add("ana", "claude", result(T0))
    ledger.add("ana", "claude", result(T0 + timedelta(minutes=1)))
    assert said == [f"the call ledger {path} cannot be written ([Errno 21] Is a directory: "
                    f"'{path}'); the timeline reads calls from the lanes until it can"]
    path.rmdir()
    ledger.add("ana", "claude", result(T0 + timedelta(minutes=2)))
    path.rename(tmp_path / "kept")
    path.mkdir()
    ledger.add("ana", "claude", result(T0 + timedelta(minutes=3)))
    assert len(said) == 2  # said again once it had worked in between
    assert len(read_ledger(tmp_path / "kept") or []) == 1


def test_the_daemons_ledger_is_beside_its_lanes(tmp_path: Path) -> None:
    lanes = Lanes(tmp_path / "run" / "lanes")
    assert ledger_for(lanes, say=lambda line: None).path == tmp_path / "run" / LEDGER_FILE
