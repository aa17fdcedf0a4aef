"""The timeline (docs/timeline.md): rows from the run's structured lines (C7) and its lanes (C8),
the SVG drawn from them, the figures per participant, and `autodev timeline`."""

from __future__ import annotations

import itertools
import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_shell.cli import main
from autodev_shell.story import (
    EVENTS_FILE,
    Call,
    build_timeline,
    parse_lane,
    participant_stats,
    render_timeline_svg,
)
from autodev_shell.story.svg import tick_step

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
KIT = Path(__file__).resolve().parents[1] / "fixtures" / "realcli" / "kit"
SVG = "{http://www.w3.org/2000/svg}"


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def log(minutes: float, event: str, message: str, **fields: Any) -> dict[str, Any]:
    return {"at": at(minutes), "kind": "log", "event": event, "message": message, **fields}


def status(minutes: float, word: str) -> dict[str, Any]:
    return {"at": at(minutes), "kind": "status", "status": word, "message": f"status: {word}"}


def call(who: str, engine: str, start: float, end: float | None, outcome: str = "posted",
         **figures: Any) -> Call:
    return Call(who, engine, T0 + timedelta(minutes=start),
                None if end is None else T0 + timedelta(minutes=end), outcome, **figures)


def row(timeline: Any, name: str) -> Any:
    return next(r for r in timeline.rows if r.name == name)


# -- rows ---------------------------------------------------------------------------------------

RECORDS = [
    status(0, "running"),
    log(10, "limit", "codex limited until 12:00", engine="codex", until=at(180)),
    log(10, "hop-limited", "ana: codex limited → claude", participant="ana", engine="codex",
        target="claude"),
    log(30, "outage", "claude could not be reached; trying it again at 09:31",
        provider="claude", until=at(31), count=1),
    log(40, "reachable", "claude is reachable again", provider="claude"),
    log(50, "failed", "ana failed on claude (claude exited with code 1); next attempt at 09:51",
        participant="ana", engine="claude", until=at(51), count=1, failure="x"),
    status(60, "rate_limited"),
    log(60, "wait-limited", "every participant limited — waiting for claude, back first at 11:00",
        until=at(120)),
    status(120, "running"),
    {"at": at(130), "kind": "control", "control": "pause", "message": "pause requested"},
    status(130, "paused"),
]
CALLS = [call("ana", "codex", 5, 10, "limit"), call("ana", "claude", 11, 20),
         call("rui", "claude", 21, 25), call("ana", "claude", 140, None)]


def test_rows_are_the_run_then_each_engine_then_each_participant() -> None:
    t = build_timeline(RECORDS, CALLS, start=T0, end=T0 + timedelta(hours=3),
                       now=T0 + timedelta(minutes=150))
    assert [(r.group, r.name) for r in t.rows] == [
        ("run", "run"), ("engine", "codex"), ("engine", "claude"),
        ("participant", "ana"), ("participant", "rui")]


def test_a_limit_spans_from_its_line_to_its_reset_on_its_engine_row() -> None:  # A11
    t = build_timeline(RECORDS, CALLS, start=T0, end=T0 + timedelta(hours=4),
                       now=T0 + timedelta(minutes=150))
    limited = [s for s in row(t, "codex").spans if s.kind == "limited"]
    assert [(s.start, s.end, s.label) for s in limited] == [
        (T0 + timedelta(minutes=10), T0 + timedelta(minutes=180), "codex limited until 12:00")]


def test_an_outage_spans_until_reachable_on_its_providers_engines() -> None:  # A27
    t = build_timeline(RECORDS, CALLS, start=T0, end=T0 + timedelta(hours=3),
                       now=T0 + timedelta(minutes=150))
    assert [(s.kind, s.start, s.end) for s in row(t, "claude").spans] == [
        ("outage", T0 + timedelta(minutes=30), T0 + timedelta(minutes=40))]


def test_waits_and_pauses_are_the_runs_status_over_time_to_the_present() -> None:  # A18, A42
    now = T0 + timedelta(minutes=150)
    t = build_timeline(RECORDS, CALLS, start=T0, end=T0 + timedelta(hours=3), now=now)
    assert [(s.kind, s.start, s.end) for s in row(t, "run").spans] == [
        ("running", T0, T0 + timedelta(minutes=60)),
        ("rate_limited", T0 + timedelta(minutes=60), T0 + timedelta(minutes=120)),
        ("running", T0 + timedelta(minutes=120), T0 + timedelta(minutes=130)),
        ("paused", T0 + timedelta(minutes=130), now)]
    assert [(m.kind, m.label) for m in row(t, "run").marks] == [("control", "pause requested")]


def test_calls_hops_and_failures_are_on_the_participants_row() -> None:
    now = T0 + timedelta(minutes=150)
    t = build_timeline(RECORDS, CALLS, start=T0, end=T0 + timedelta(hours=3), now=now)
    ana = row(t, "ana")
    assert [(s.kind, s.label) for s in ana.spans] == [
        ("call-limit", "ana on codex (limit)"), ("call-posted", "ana on claude (posted)"),
        ("call-open", "ana on claude (in a call)")]
    assert ana.spans[-1].end == now  # a call in flight reaches the present
    assert [m.kind for m in ana.marks] == ["hop", "failed"]


def test_the_window_clips_everything_to_itself() -> None:
    start, end = T0 + timedelta(minutes=15), T0 + timedelta(minutes=35)
    t = build_timeline(RECORDS, CALLS, start=start, end=end, now=T0 + timedelta(minutes=150))
    assert row(t, "codex").spans[0].start == start and row(t, "codex").spans[0].end == end
    assert [m.kind for m in row(t, "ana").marks] == []  # the hop (10) and failure (50) are out
    with pytest.raises(ValueError, match="must end after it starts"):
        build_timeline(RECORDS, CALLS, start=end, end=start, now=end)


_minutes = st.integers(min_value=0, max_value=7 * 24 * 60)
_record = st.one_of(
    st.builds(lambda m, w: status(m, w), _minutes,
              st.sampled_from(["running", "rate_limited", "paused", "stopped"])),
    st.builds(lambda m, d, e: log(m, "limit", "x", engine=e, until=at(m + d)), _minutes,
              st.integers(-60, 600), st.sampled_from(["claude", "codex:gpt-5"])),
    st.builds(lambda m, p: log(m, "outage", "o", provider=p), _minutes,
              st.sampled_from(["claude", "codex"])),
    st.builds(lambda m, p: log(m, "reachable", "r", provider=p), _minutes,
              st.sampled_from(["claude", "codex"])),
    st.builds(lambda m, k: log(m, k, "m", participant="ana"), _minutes,
              st.sampled_from(["hop-limited", "failed", "lifted", "handover-limited"])),
)
_call = st.builds(lambda w, s, d: call(w, "claude", s, None if d is None else s + d),
                  st.sampled_from(["ana", "rui"]), _minutes,
                  st.none() | st.integers(0, 300))


@given(records=st.lists(_record, max_size=25), calls=st.lists(_call, max_size=15),
       start=_minutes, hours=st.integers(1, 168), now=_minutes)
def test_every_span_and_mark_lies_in_the_window_and_the_run_never_overlaps_itself(
    records: list[dict[str, Any]], calls: list[Call], start: int, hours: int, now: int
) -> None:
    begin = T0 + timedelta(minutes=start)
    end = begin + timedelta(hours=hours)
    t = build_timeline(records, calls, start=begin, end=end, now=T0 + timedelta(minutes=now))
    for r in t.rows:
        for s in r.spans:
            assert begin <= s.start < s.end <= end
        for m in r.marks:
            assert begin <= m.at <= end
    run = row(t, "run").spans
    assert all(a.end <= b.start for a, b in itertools.pairwise(run))
    for who in ("ana", "rui"):
        expected = sum(1 for c in calls if c.participant == who
                       and (c.end or max(t.now, c.start)) > begin and c.start < end
                       and (c.end or max(t.now, c.start)) > c.start)
        got = [r for r in t.rows if r.name == who]
        assert (len(got[0].spans) if got else 0) == expected


# -- the SVG ------------------------------------------------------------------------------------


@given(message=st.text(max_size=40), name=st.sampled_from(["ana", "a-b.c_d"]))
def test_the_svg_is_well_formed_whatever_a_line_says(message: str, name: str) -> None:
    records = [status(0, "running"), log(5, "failed", message, participant=name)]
    t = build_timeline(records, [call(name, "claude", 1, 4)], start=T0,
                       end=T0 + timedelta(hours=1), now=T0 + timedelta(minutes=30))
    root = ET.fromstring(render_timeline_svg(t, title=f"run {message}"))
    assert root.tag == f"{SVG}svg"
    spans = [e for e in root.iter(f"{SVG}rect") if "span" in e.get("class", "").split()]
    assert len(spans) == sum(len(r.spans) for r in t.rows)
    marks = root.findall(f".//{SVG}polygon")
    assert [m.find(f"{SVG}title").text or "" for m in marks] == [  # type: ignore[union-attr]
        "".join(c for c in message if c in "\t\n" or (ord(c) >= 0x20 and c not in "\ufffe\uffff"))]


def test_the_svg_draws_the_present_moment_and_labels_each_row() -> None:
    now = T0 + timedelta(minutes=150)
    t = build_timeline(RECORDS, CALLS, start=T0, end=T0 + timedelta(hours=3), now=now)
    svg = render_timeline_svg(t)
    root = ET.fromstring(svg)
    lines = [e for e in root.iter(f"{SVG}line") if e.get("class") == "now"]
    assert len(lines) == 1 and float(lines[0].get("x1", "0")) == pytest.approx(
        150 + (1000 - 150 - 10) * 150 / 180, abs=0.1)
    assert [g.get("data-name") for g in root.iter(f"{SVG}g")] == [
        "run", "codex", "claude", "ana", "rui"]
    later = build_timeline(RECORDS, CALLS, start=T0, end=T0 + timedelta(hours=1), now=now)
    assert 'class="now"' not in render_timeline_svg(later)  # the present is off this window


@pytest.mark.parametrize(("window", "step"), [
    (timedelta(hours=1), timedelta(minutes=5)), (timedelta(hours=24), timedelta(hours=2)),
    (timedelta(days=7), timedelta(hours=24))])
def test_ticks_zoom_from_an_hour_to_a_week(window: timedelta, step: timedelta) -> None:
    assert tick_step(window) == step


# -- calls from lanes, and the figures ----------------------------------------------------------


def _kit_lane(name: str, who: str, engine: str) -> str:
    recorded = json.loads((KIT / name).read_text("utf-8"))
    return (f"\n=== 2026-12-07T09:00:00+00:00 {who} on {engine}: {engine} -p <12 chars on stdin>\n"
            f"{recorded['stdout']}{recorded['stderr']}"
            "\n=== 2026-12-07T09:01:30+00:00 exit 0; read as other; posted\n")


def test_claudes_cost_and_codexs_tokens_are_read_from_the_real_clis_output() -> None:
    claude = parse_lane(_kit_lane("claude-2.1.332-normal.json", "ana", "claude"))
    codex = parse_lane(_kit_lane("codex-0.171.0-normal.json", "rui", "codex"))
    assert claude == [Call("ana", "claude", T0, T0 + timedelta(seconds=90), "posted",
                           cost_usd=0.000094, tokens=None)]
    assert codex == [Call("rui", "codex", T0, T0 + timedelta(seconds=90), "posted",
                          cost_usd=None, tokens=19)]


def test_a_lane_tells_how_each_call_ended_and_the_call_in_flight() -> None:
    text = ("\n=== 2026-12-07T09:00:00+00:00 ana on claude: claude -p x\nout\n"
            "\n=== 2026-12-07T09:00:10+00:00 timed out; process group killed; read as other\n"
            "\n=== 2026-12-07T09:01:00+00:00 ana on codex:gpt-5: codex exec x\n"
            "\n=== 2026-12-07T09:01:05+00:00 exit 1; read as limit\n"
            "\n=== 2026-12-07T09:02:00+00:00 ana on claude: claude -p x\npartial\n")
    assert [(c.engine, c.outcome, c.end is None) for c in parse_lane(text)] == [
        ("claude", "timed-out", False), ("codex:gpt-5", "limit", False), ("claude", "open", True)]


def test_figures_per_participant() -> None:
    records = [log(1, "posted", "ana posted via claude", participant="ana", engine="claude"),
               log(2, "posted", "ana posted via claude", participant="ana", engine="claude"),
               log(3, "failed", "rui failed", participant="rui", engine="codex"),
               log(500, "posted", "ana posted via claude", participant="ana")]
    calls = [call("ana", "claude", 0, 1, cost_usd=0.25), call("ana", "claude", 1.5, 2,
             cost_usd=0.5), call("rui", "codex", 2, 3, "other", tokens=1200),
             call("rui", "codex", 3, 3.5, "other")]
    stats = participant_stats(records, calls, start=T0, end=T0 + timedelta(hours=1))
    assert [(s.participant, s.calls, s.posts, s.failures, s.seconds_in_calls, s.cost_usd,
             s.tokens) for s in stats] == [
        ("ana", 2, 2, 0, 90.0, 0.75, None), ("rui", 2, 0, 1, 90.0, None, 1200)]


# -- autodev timeline ---------------------------------------------------------------------------


def _run_folder(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "lanes").mkdir(parents=True)
    (run / "run.db").write_bytes(b"")
    (run / EVENTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in RECORDS)
                                   + "not json\n", "utf-8")
    (run / "lanes" / "ana.log").write_text(_kit_lane("claude-2.1.332-normal.json", "ana",
                                                     "claude"), "utf-8")
    (run / "lanes" / "rui.log").write_text(_kit_lane("codex-0.171.0-normal.json", "rui",
                                                     "codex"), "utf-8")
    return run


def test_autodev_timeline_writes_the_svg_and_prints_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    run = _run_folder(tmp_path)
    out = tmp_path / "t.svg"
    assert main(["timeline", "--run", str(run), "--svg", str(out),
                 "--since", "2026-12-07T08:00"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1:] == [
        f"timeline written to {out}",
        "participant  calls  posts  failures  in calls     cost  tokens",
        "ana              1      0         1     1m30s  $0.0001       -",
        "rui              1      0         0     1m30s        -      19",
    ]
    root = ET.parse(out).getroot()
    assert [g.get("data-name") for g in root.iter(f"{SVG}g")] == [
        "run", "codex", "claude", "ana", "rui"]


@pytest.mark.parametrize(("args", "said"), [
    (["--hours", "200"], "autodev: --hours: must be from 1 (an hour) to 168 (a week), not 200\n"),
    (["--since", "yesterday"], "autodev: --since: 'yesterday' is not an ISO 8601 time such as "
                               "2026-12-07T09:00 or 2026-12-07\n"),
])
def test_autodev_timeline_refuses_a_bad_window_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    assert main(["timeline", "--run", str(_run_folder(tmp_path)), *args]) == 2
    assert capsys.readouterr().err == said
