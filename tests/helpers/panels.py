"""A run to show and a real `autodev panel` process serving it, for tests/test_panel_*.py
(docs/panel.md). Requests go over real HTTP on loopback (http.client). Nothing here decides what a
test expects."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from autodev_core import Engine, SchedulerConfig, initial_state, parse_participant
from autodev_core.scheduler.state import EngineLimit, Outage
from autodev_core.serialization import to_json
from autodev_shell.panel.security import csrf_of
from autodev_shell.store.run_store import NewPost, RunStore

WAIT = 60.0
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TEAM = {
    "ana": "---\nprovider: claude\nfailover: [codex]\n---\nYou are Ana. Review.\n",
    "rui": "---\nprovider: codex\n---\nYou are Rui. Implement.\n",
}


def make_team(root: Path) -> Path:
    team = root / "team"
    team.mkdir(parents=True)
    for pid, text in TEAM.items():
        (team / f"{pid}.md").write_text(text, encoding="utf-8")
    return team


def scheduler_json(*, limited_until: datetime | None = None,
                   outage_until: datetime | None = None, status: str = "running") -> str:
    """A stored scheduler state as the core writes it: ana on claude (chain: codex), rui on
    codex; claude limited until `limited_until` (read from a notice), codex out until
    `outage_until`."""
    team = [parse_participant(text, id=pid) for pid, text in TEAM.items()]
    state = initial_state(SchedulerConfig(team=team, installed=frozenset({"claude", "codex"}),
                                          timezone="Europe/Lisbon"))
    changes: dict[str, Any] = {"status": status, "last_event_at": START}
    if limited_until is not None:
        changes["limits"] = (EngineLimit(engine=Engine("claude"), until=limited_until,
                                         read=True, seen=START),)
        changes["status"] = "rate_limited" if status == "running" else status
        changes["wait_until"] = limited_until
    if outage_until is not None:
        changes["outages"] = (Outage(provider="codex", retry_at=outage_until, attempts=2),)
    return to_json(attrs.evolve(state, **changes))


def make_run(root: Path, *, posts: int = 0, per_revision: int = 1, state: str | None = None,
             texts: list[str] | None = None) -> Path:
    """A run folder whose store holds `posts` posts, `per_revision` to a revision (the last
    revision may hold fewer), authored by ana and rui in turn."""
    run = root / "run"
    run.mkdir(parents=True)
    store = RunStore.open(run / "run.db", create=True, run_id="panel-test", now=START)
    try:
        state_text = state if state is not None else scheduler_json()
        texts = texts if texts is not None else [f"post {i}" for i in range(posts)]
        revision = 0
        for first in range(0, len(texts), per_revision):
            revision += 1
            batch = [
                NewPost(participant=("ana", "rui")[i % 2], engine="claude", text=texts[i],
                        at=START + timedelta(seconds=i), key=f"p{i}")
                for i in range(first, min(first + per_revision, len(texts)))
            ]
            store.commit(revision, batch, state_text, persistence_state_json="{}",
                         now=START + timedelta(seconds=first))
        if revision == 0:
            store.commit(1, [], state_text, persistence_state_json="{}", now=START)
    finally:
        store.close()
    return run


def control_rows(run: Path) -> list[tuple[str, str]]:
    """(command, arg) of every row of the run's control table (C6), opened read-only."""
    conn = sqlite3.connect(f"file:{run / 'run.db'}?mode=ro", uri=True)
    try:
        return [(r[0], r[1]) for r in conn.execute("SELECT command, arg FROM controls")]
    finally:
        conn.close()


def add_posts(run: Path, texts: list[str], *, author: str = "ana") -> int:
    """Commit one more revision carrying `texts` (as the daemon would); returns it."""
    store = RunStore.open(run / "run.db")
    try:
        revision = store.revision + 1
        state = store.committed_state().scheduler_state_json
        count = store.post_count()
        store.commit(revision, [NewPost(participant=author, engine="claude", text=text,
                                        at=START + timedelta(hours=1, seconds=i),
                                        key=f"late{count + i}")
                                for i, text in enumerate(texts)],
                     state, persistence_state_json="{}", now=START + timedelta(hours=1))
        return revision
    finally:
        store.close()


class Answer:
    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body[:200]!r})"


class Panel:
    """A real `autodev panel` process (the command, in a subprocess)."""

    def __init__(self, run: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autodev_shell.cli", "panel", "--run", str(run), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env or {**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        self.line = self.proc.stdout.readline()
        found = re.search(r"http://\S+", self.line)
        if found is None:
            self.proc.kill()
            _out, err = self.proc.communicate(timeout=WAIT)
            raise AssertionError(f"no URL printed: {self.line!r} {err!r}")
        self.url = found.group(0)
        self.port = int(re.search(r":(\d+)/", self.url).group(1))  # type: ignore[union-attr]
        self.token = self.url.split("token=", 1)[1]
        self.host = f"127.0.0.1:{self.port}"

    def request(self, method: str, path: str, *, body: bytes | str | None = None,
                headers: dict[str, str] | None = None, cookie: bool = True,
                csrf: bool = True, host: str | None = None, origin: str | None = "same",
                timeout: float = WAIT) -> Answer:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        sent = {"Host": host or self.host}
        if cookie:
            sent["Cookie"] = f"autodev_panel={self.token}"
        if method not in ("GET", "HEAD"):
            if csrf:
                sent["X-Autodev-CSRF"] = csrf_of(self.token)  # the page's value (issue 41)
            if origin == "same":
                sent["Origin"] = f"http://{host or self.host}"
            elif origin is not None:
                sent["Origin"] = origin
        sent.update(headers or {})
        data = body.encode("utf-8") if isinstance(body, str) else body
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for key, value in sent.items():
                conn.putheader(key, value)
            if data is not None:
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders(data)
            response = conn.getresponse()
            return Answer(response.status, response.headers, response.read())
        finally:
            conn.close()

    def events(self, *, last_event_id: str | None = None, query: str = "") -> EventReader:
        return EventReader(self, last_event_id, query)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


class EventReader:
    """An open `/events` stream read event by event."""

    def __init__(self, panel: Panel, last_event_id: str | None, query: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", panel.port, timeout=WAIT)
        headers = {"Host": panel.host, "Cookie": f"autodev_panel={panel.token}",
                   "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self.conn.request("GET", f"/events{query}", headers=headers)
        self.response = self.conn.getresponse()

    def next(self, deadline: float | None = None) -> dict[str, Any]:
        """The next event: {event, id, data} (comments skipped); AssertionError once
        `deadline` (a monotonic time) passes — checked at each line, pings included."""
        event: dict[str, Any] = {"event": "message", "id": None, "data": ""}
        got = False
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise AssertionError("no such event before the deadline")
            raw = self.response.readline()
            if not raw:
                raise EOFError("the stream ended")
            line = raw.decode("utf-8").rstrip("\n")
            if not line:
                if got:
                    if event["data"]:
                        event["data"] = json.loads(event["data"])
                    return event
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(": ")
            if field in ("retry",):
                continue
            got = True
            if field == "data":
                event["data"] += value
            else:
                event[field] = value

    def until(self, predicate: Any, *, seconds: float = WAIT) -> list[dict[str, Any]]:
        """Events up to and including the first for which `predicate` holds."""
        seen = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            event = self.next(deadline)
            seen.append(event)
            if predicate(event):
                return seen
        raise AssertionError(f"no such event in {seconds}s; saw {[e['event'] for e in seen]}")

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def panel_factory() -> Iterator[Any]:
    started: list[Panel] = []

    def start(run: Path, *args: str) -> Panel:
        panel = Panel(run, *args)
        started.append(panel)
        return panel

    yield start
    for panel in started:
        if panel.proc.poll() is None:
            panel.stop()
