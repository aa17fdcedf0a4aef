"""The panel's routes (docs/panel.md): `/api/status` is `status --json`, the thread pages without
loss, the event stream delivers new posts live and resumes from `Last-Event-ID` without a
duplicate, controls go through the control table (C6), lanes arrive cleaned."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

from helpers.panels import (
    add_posts,
    control_rows,
    make_run,
    panel_factory,
    scheduler_json,
)

from autodev_shell.store.run_store import NewPost, RunStore

__all__ = ["panel_factory"]


# --- /api/status is `autodev status --json` ----------------------------------------------------


NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


class _Now(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return NOW if tz is None else NOW.astimezone(tz)


@pytest.mark.parametrize("shape", ["limited", "outage", "plain", "no state"])
def test_C6_api_status_is_byte_for_byte_what_status_json_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str) -> None:
    """The route and the command call the same function: at one instant, the same bytes."""
    from autodev_shell.cli import main
    from autodev_shell.panel.app import Panel as App
    from autodev_shell.status import report

    state = {"limited": scheduler_json(limited_until=NOW + timedelta(hours=2)),
             "outage": scheduler_json(outage_until=NOW + timedelta(minutes=5)),
             "plain": scheduler_json(), "no state": "{}"}[shape]
    run = make_run(tmp_path, posts=4, state=state)
    monkeypatch.setattr(report, "datetime", _Now)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["status", "--json", "--run", str(run)]) == 0
    app = App(run, team_dir=None, token="t", read_only=False)
    answer = app.api_status(None)  # type: ignore[arg-type]
    app.reader.close()
    assert answer.body == out.getvalue().encode("utf-8")
    assert answer.media_type == "application/json"


def test_api_status_over_http_equals_the_command_output(tmp_path: Path,
                                                        panel_factory: Any) -> None:
    """The same through the real server and the real command, in two processes: equal but
    for the heartbeat's age, which moves between the two reads."""
    run = make_run(tmp_path, posts=2,
                   state=scheduler_json(limited_until=datetime.now(UTC) + timedelta(hours=1)))
    panel = panel_factory(run)
    served = panel.request("GET", "/api/status")
    printed = subprocess.run([sys.executable, "-m", "autodev_shell.cli", "status", "--json",
                              "--run", str(run)], capture_output=True, text=True, timeout=60)
    assert served.status == 200 and printed.returncode == 0
    assert served.text == printed.stdout  # no heartbeat yet: nothing moves


# --- thread paging ------------------------------------------------------------------------------


def test_the_thread_pages_back_without_loss_or_duplicate(tmp_path: Path,
                                                         panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=530, per_revision=3)
    panel = panel_factory(run)
    first = panel.request("GET", "/api/thread?limit=50").json()
    assert [p["seq"] for p in first] == list(range(481, 531))  # the newest 50, oldest first
    got = list(first)
    before = first[0]["revision"]
    while True:
        page = panel.request("GET", f"/api/thread?before={before}&limit=50").json()
        if not page:
            break
        assert all(p["revision"] < before for p in page)
        got = page + got
        before = page[0]["revision"]
    assert [p["seq"] for p in got] == list(range(1, 531))
    assert [p["text"] for p in got] == [f"post {i}" for i in range(530)]
    assert panel.request("GET", "/api/thread?before=x").status == 400
    # Past SQLite's 64-bit integers: the end of the thread (or nothing), never a 500.
    beyond = panel.request("GET", f"/api/thread?before={2**64}&limit=50")
    assert beyond.status == 200 and [p["seq"] for p in beyond.json()] == list(range(481, 531))
    below = panel.request("GET", f"/api/thread?before={-2**64}&limit=50")
    assert below.status == 200 and below.json() == []
    assert len(panel.request("GET", "/api/thread?limit=100000").json()) == 500


# --- the event stream ---------------------------------------------------------------------------


def test_a_new_post_reaches_an_open_stream_and_a_reconnect_resumes_without_duplicates(
        tmp_path: Path, panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=120, per_revision=2)
    panel = panel_factory(run)
    stream = panel.events()
    opening = stream.until(lambda e: e["event"] == "post" and e["data"]["seq"] == 120)
    posts = [e for e in opening if e["event"] == "post"]
    assert opening[0]["event"] == "status"
    assert [e["data"]["seq"] for e in posts] == list(range(71, 121))  # the newest 50
    # `id:` only on the last post of each revision: Last-Event-ID names a whole revision
    for event in posts:
        last_of_revision = not [p for p in posts if p["data"]["revision"] ==
                                event["data"]["revision"] and p["data"]["seq"] >
                                event["data"]["seq"]]
        assert (event["id"] == str(event["data"]["revision"])) == last_of_revision
    revision = add_posts(run, ["live one", "live two <script>alert(1)</script>"])
    live = stream.until(lambda e: e["event"] == "post" and e["data"]["text"].startswith(
        "live two"))
    new = [e["data"] for e in live if e["event"] == "post"]
    assert [p["text"] for p in new] == ["live one", "live two <script>alert(1)</script>"]
    assert {p["revision"] for p in new} == {revision}
    last_id = [e for e in live if e["event"] == "post"][-1]["id"]
    stream.close()
    # a reconnect with the last id sends only later posts
    later = add_posts(run, ["after the gap"])
    again = panel.events(last_event_id=last_id)
    resumed = again.until(lambda e: e["event"] == "post")
    assert [e["data"]["text"] for e in resumed if e["event"] == "post"] == ["after the gap"]
    assert resumed[-1]["id"] == str(later)
    again.close()
    # `?after=` does the same for a page's first connection
    fresh = panel.events(query=f"?after={revision}")
    assert fresh.until(lambda e: e["event"] == "post")[-1]["data"]["text"] == "after the gap"
    fresh.close()


def test_a_reconnect_across_a_panel_restart_sends_no_post_twice(tmp_path: Path,
                                                                panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=10)
    first = panel_factory(run)
    stream = first.events()
    seen = stream.until(lambda e: e["event"] == "post" and e["data"]["seq"] == 10)
    last = [e for e in seen if e["event"] == "post"][-1]["id"]
    stream.close()
    assert first.stop() == 0
    add_posts(run, ["while the panel was down"])
    second = panel_factory(run)
    again = second.events(last_event_id=last)
    got = again.until(lambda e: e["event"] == "post")
    assert [e["data"]["text"] for e in got if e["event"] == "post"] == [
        "while the panel was down"]
    again.close()


def test_a_reconnect_that_missed_more_than_a_page_is_told_to_resync(
        tmp_path: Path, panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=600)
    panel = panel_factory(run)
    stream = panel.events(last_event_id="1")
    events = stream.until(lambda e: e["event"] in ("resync", "post"))
    assert events[-1]["event"] == "resync"
    stream.close()


def test_the_status_event_carries_the_status_facts_and_the_view(tmp_path: Path,
                                                                panel_factory: Any) -> None:
    until = (datetime.now(UTC) + timedelta(hours=1, minutes=12)).replace(microsecond=0)
    run = make_run(tmp_path, posts=1, state=scheduler_json(limited_until=until))
    panel = panel_factory(run)
    stream = panel.events()
    status = stream.until(lambda e: e["event"] == "status")[-1]["data"]
    stream.close()
    printed = json.loads(panel.request("GET", "/api/status").text)
    facts = status["facts"]
    assert facts["status"] == printed["status"] == "rate_limited"
    assert facts["limits"] == printed["limits"]
    view = status["view"]
    assert view["daemon"] == "daemon not running" and view["daemon_running"] is False
    (limit,) = view["limits"]
    assert limit["engine"] == "claude" and limit["lanes"] == ["ana"]
    assert limit["until"] == until.isoformat().replace("+00:00", "Z")
    assert limit["back_at"].startswith("back at ")
    assert limit["back_at"].endswith(("WET", "WEST"))  # the run's zone, Europe/Lisbon
    assert limit["origin"] == "read from the CLI's notice"
    ana = view["participants"][0]
    assert ana["id"] == "ana"
    assert [(c["engine"], c["limited"], c.get("next", False)) for c in ana["chain"]] == [
        ("claude", True, False), ("codex", False, True)]


# --- controls -----------------------------------------------------------------------------------


def test_controls_queue_through_the_control_table_and_pause_needs_a_daemon(
        tmp_path: Path, panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=1)
    panel = panel_factory(run)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for command in ("pause", "resume", "stop"):
        answer = panel.request("POST", f"/api/{command}")
        assert answer.status == 409 and "not running" in answer.json()["error"]
    assert control_rows(run) == []
    assert panel.request("POST", "/api/say", body="message=+++", headers=form).status == 400
    answer = panel.request("POST", "/api/say", body="message=hello+team", headers=form)
    assert answer.status == 200
    assert answer.json()["daemon_running"] is False
    assert "not running" in answer.json()["message"]
    assert control_rows(run) == [("say", "hello team")]


def test_pause_resume_stop_queue_while_the_daemon_holds_the_lock(
        tmp_path: Path, panel_factory: Any) -> None:
    from autodev_shell.store.runlock import RunLock

    run = make_run(tmp_path, posts=1)
    lock = RunLock.acquire(run / "run.db", run="panel-test")  # as a live daemon holds it
    try:
        panel = panel_factory(run)
        for command in ("pause", "resume", "stop"):
            answer = panel.request("POST", f"/api/{command}")
            assert answer.status == 200, answer
            assert answer.json()["command"] == command and answer.json()["daemon_running"]
        assert control_rows(run) == [("pause", ""), ("resume", ""), ("stop", "")]
        stream = panel.events()
        status = stream.until(lambda e: e["event"] == "status")[-1]["data"]
        stream.close()
        assert status["view"]["daemon"] == "daemon running"
    finally:
        lock.release()


# --- lanes --------------------------------------------------------------------------------------


def test_a_lane_arrives_cleaned_and_grouped_live(tmp_path: Path, panel_factory: Any) -> None:
    from autodev_shell.calls.lanes import Lanes

    run = make_run(tmp_path, posts=1)
    lanes = Lanes(run / "lanes")
    lanes.begin_call("ana", engine="claude", argv=["claude", "-p", "--api-key", "sk-secret123456"],
                     at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    lanes.append("ana", b"\x1b[31mred\x1b[0m plain\n")
    panel = panel_factory(run)
    stream = panel.events()
    first = stream.until(lambda e: e["event"] == "lane")[-1]["data"]
    assert first["reset"] is True and first["participant"] == "ana"
    kinds = [p["kind"] for p in first["pieces"]]
    assert "header" in kinds
    header = next(p for p in first["pieces"] if p["kind"] == "header")
    assert "sk-secret" not in json.dumps(header) and "***" in json.dumps(header)
    red = next(p for p in first["pieces"] if "red" in json.dumps(p["spans"]))
    assert red["spans"][0] == ["ansi-fg-1", "red"]
    lanes.append("ana", b"<img src=x onerror=alert(1)> \x1b]0;title\x07\x1b[2Kdone "
                        b"OPENAI_API_KEY=abc123\n")
    live = stream.until(lambda e: e["event"] == "lane" and not e["data"]["reset"])[-1]["data"]
    (piece,) = live["pieces"]
    text = "".join(t for _c, t in piece["spans"])
    assert text == "<img src=x onerror=alert(1)> done OPENAI_API_KEY=***"
    stream.close()
    whole = panel.request("GET", "/api/lane/ana").json()
    assert any("done" in json.dumps(p) for p in whole["pieces"])
    assert panel.request("GET", "/api/lane/..%2Fetc").status == 404
    assert panel.request("GET", "/api/lane/nobody").status == 404


def test_a_store_replaced_under_the_panel_makes_every_page_start_again(
        tmp_path: Path, panel_factory: Any) -> None:
    """`autodev restore` replaces run.db (B14): the panel reads the new file, and the pages
    it serves are told to resync rather than keep a thread the store no longer holds."""
    run = make_run(tmp_path / "a", posts=5)
    other = make_run(tmp_path / "b", posts=2, texts=["restored one", "restored two"])
    panel = panel_factory(run)
    stream = panel.events()
    stream.until(lambda e: e["event"] == "post" and e["data"]["seq"] == 5)
    os.replace(other / "run.db", run / "run.db")
    assert stream.until(lambda e: e["event"] == "resync")[-1]["data"]["reason"]
    stream.close()
    again = panel.events()
    texts = [e["data"]["text"] for e in again.until(
        lambda e: e["event"] == "post" and e["data"]["seq"] == 2) if e["event"] == "post"]
    assert texts == ["restored one", "restored two"]
    again.close()


def test_a_failing_status_read_does_not_lose_the_posts_of_its_tick(tmp_path: Path) -> None:
    from autodev_shell.panel.live import Hub
    from autodev_shell.panel.store_reads import RunReader

    def broken() -> dict[str, Any]:
        raise RuntimeError("the status could not be read")

    run = make_run(tmp_path, posts=2)
    reader = RunReader(run)
    hub = Hub(reader, broken, lambda: [])
    hub.tick()
    add_posts(run, ["one", "two"])
    sent = hub.tick()
    texts = [json.loads(t.split("data: ", 1)[1])["text"] for _s, t in sent if "event: post" in t]
    assert texts == ["one", "two"] and hub.last_seq == 4
    reader.close()


def test_a_burst_larger_than_one_read_is_sent_whole_with_no_commit_after_it(
        tmp_path: Path) -> None:
    """Issue 41 (bursts): 1,200 posts committed between two polls, then nothing more. The
    poller reads 500 at a time (MAX_PAGE); it reads on at the next ticks though `data_version`
    no longer changes, so every post is sent, once, in order."""
    from autodev_shell.panel.live import Hub
    from autodev_shell.panel.store_reads import MAX_PAGE, RunReader

    run = make_run(tmp_path, posts=2)
    reader = RunReader(run)
    hub = Hub(reader, lambda: {"view": {}}, lambda: [])
    hub.tick()
    texts = [f"burst {i}" for i in range(MAX_PAGE * 2 + 200)]
    add_posts(run, texts)
    sent: list[str] = []
    for _ in range(4):  # no commit between these ticks
        sent += [json.loads(t.split("data: ", 1)[1])["text"] for _s, t in hub.tick()
                 if "event: post" in t]
    assert sent == texts
    reader.close()


@pytest.mark.parametrize("sizes", [(300, 300), (700,), (499, 2, 1)])
def test_an_id_never_names_a_revision_not_all_sent(tmp_path: Path, sizes: tuple[int, ...]
                                                   ) -> None:
    """Issue 41 (bursts): revisions of many posts committed between two polls. Each read of 500
    posts may end inside a revision; the `id:` (what a reconnecting page sends as
    Last-Event-ID) is only ever on the last post of a revision all of whose posts were sent."""
    from autodev_shell.panel.live import Hub
    from autodev_shell.panel.store_reads import RunReader

    run = make_run(tmp_path, posts=1)
    reader = RunReader(run)
    hub = Hub(reader, lambda: {"view": {}}, lambda: [])
    hub.tick()
    store = RunStore.open(run / "run.db")
    try:
        state = store.committed_state()
        revision, now = state.revision, datetime.now(UTC)
        for size in sizes:
            revision += 1
            store.commit(revision, tuple(NewPost("ana", "claude", f"{revision}.{i}", now,
                                                 key=f"big-{revision}-{i}")
                                         for i in range(size)),
                         state.scheduler_state_json,
                         persistence_state_json=state.persistence_state_json, now=now)
    finally:
        store.close()
    sent: list[tuple[int, str | None]] = []
    for _ in range(5):
        for _seq, text in hub.tick():
            if "event: post" in text:
                data = json.loads(text.split("data: ", 1)[1])
                named = text.split("\n", 1)[0][4:] if text.startswith("id: ") else None
                sent.append((data["revision"], named))
    assert len(sent) == sum(sizes)
    for index, (rev, named) in enumerate(sent):
        if named is not None:
            assert named == str(rev)
            assert all(r != rev for r, _n in sent[index + 1:]), f"revision {rev} named early"
    named_revisions = [n for _r, n in sent if n is not None]
    assert named_revisions == [str(r) for r in sorted({r for r, _n in sent})]
    reader.close()


def test_a_page_ahead_of_the_store_is_told_to_resync(tmp_path: Path,
                                                     panel_factory: Any) -> None:
    """A page that saw revision 40 reconnects to a panel whose store holds 10 revisions (the
    store was restored from an older checkpoint meanwhile): it must start afresh."""
    panel = panel_factory(make_run(tmp_path, posts=10))
    stream = panel.events(last_event_id="40")
    assert stream.until(lambda e: e["event"] in ("resync", "post"))[-1]["event"] == "resync"
    stream.close()
    level = panel.events(last_event_id="10")  # level with the store: nothing to resend
    first = level.until(lambda e: e["event"] in ("status", "resync", "post", "lane"))
    assert first[-1]["event"] == "status"
    level.close()
