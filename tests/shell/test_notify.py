"""`notify:` (docs/notifications.md): which lines notify (a table of log kinds, A18 A29 A31 A32,
the `stopped` status of A42, sharing lost), the settings and their one-line errors, delivery to a
command and to Apprise URLs on loopback (bounded tries, never blocking the run) and URLs redacted
in every line."""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.engine import Engine
from autodev_core.names import LOG_KINDS
from autodev_core.scheduler import Log
from autodev_shell.cli import main
from autodev_shell.notify import (
    NOTIFYING_KINDS,
    Notifier,
    NotifyingLog,
    NotifySettings,
    notify_settings,
    scrub,
    shown_url,
)
from autodev_shell.team import load_team

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


class ListSink:
    """A log sink that keeps what it is told."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def line(self, at: datetime, message: str) -> None:
        self.told.append(("line", message))

    def entry(self, log: Log) -> None:
        self.told.append(("entry", log.message))

    def status(self, at: datetime, status: str) -> None:
        self.told.append(("status", status))

    def control(self, at: datetime, command: str) -> None:
        self.told.append(("control", command))

    def note(self, at: datetime, message: str) -> None:
        self.told.append(("note", message))

    def close(self) -> None:
        pass


class Collect:
    """A stand-in notifier: the notices submitted."""

    def __init__(self) -> None:
        self.notices: list[dict[str, Any]] = []

    def submit(self, notice: dict[str, Any]) -> None:
        self.notices.append(notice)


def _watched() -> tuple[NotifyingLog, Collect]:
    collect = Collect()
    return NotifyingLog(ListSink(), collect, "r1"), collect  # type: ignore[arg-type]


# -- which lines notify -------------------------------------------------------------------------


@given(st.sampled_from(LOG_KINDS))
def test_a_core_line_notifies_exactly_when_its_kind_is_in_the_table(kind: str) -> None:
    log, collect = _watched()
    line = Log(T0, "a line", kind, participant="ana", engine=Engine("claude"),  # type: ignore[arg-type]
               until=T0 + timedelta(hours=1), count=3)
    log.entry(line)
    assert len(collect.notices) == (1 if kind in NOTIFYING_KINDS else 0)
    if collect.notices:
        notice = collect.notices[0]
        assert notice["event"] == kind and notice["run"] == "r1"
        assert notice["message"] == "a line" and notice["participant"] == "ana"
        assert notice["until"] == (T0 + timedelta(hours=1)).isoformat()


def test_the_pauses_and_every_participant_limited_notify() -> None:
    # A29, A31, A32: the run pauses and needs its operator; A18: nobody can take a turn.
    assert set(NOTIFYING_KINDS) == {"gave-up", "empty-turns", "not-logged-in", "wait-limited"}


def test_a_stopped_run_notifies_once_with_the_line_that_stopped_it() -> None:
    log, collect = _watched()
    log.entry(Log(T0, "Reached max_iterations (5 calls); run stopped.", "max-iterations",
                  count=5))
    log.status(T0, "paused")
    log.status(T0, "stopped")
    assert [n["event"] for n in collect.notices] == ["stopped"]
    assert collect.notices[0]["message"] == "Reached max_iterations (5 calls); run stopped."


def test_sharing_lost_notifies_and_sharing_back_does_not() -> None:
    log, collect = _watched()
    log.note(T0, "limit sharing lost (redis://***@h:6379: refused); carrying on with this "
                 "run's own limits")
    log.note(T0, "limit sharing is back (redis://***@h:6379)")
    log.note(T0, "sharing limits via redis://h as 'x'")
    assert [n["event"] for n in collect.notices] == ["sharing-lost"]


def test_every_line_still_reaches_the_log() -> None:
    inner = ListSink()
    log = NotifyingLog(inner, Collect(), "r1")  # type: ignore[arg-type]
    log.entry(Log(T0, "ana posted via claude", "posted"))
    log.status(T0, "stopped")
    log.control(T0, "stop")
    log.note(T0, "a note")
    log.line(T0, "a line")
    assert inner.told == [("entry", "ana posted via claude"), ("status", "stopped"),
                          ("control", "stop"), ("note", "a note"), ("line", "a line")]


# -- settings -----------------------------------------------------------------------------------


def test_settings_read_a_command_and_urls() -> None:
    got = notify_settings({"command": ["tell", "me"], "urls": ["json://h/p"], "timeout": 5,
                           "attempts": 2}, source="a.yaml")
    assert got == NotifySettings(("tell", "me"), ("json://h/p",), 5.0, 2)
    assert notify_settings(None, source="a.yaml") == NotifySettings()
    assert not NotifySettings().enabled


@pytest.mark.parametrize(("value", "said"), [
    ("tell-me", "notify: must be a mapping with command: and/or urls:"),
    ({"command": "tell me"}, "notify.command: must be a list of arguments (argv)"),
    ({"urls": ["not a url"]}, "notify.urls: must be a list of notification URLs"),
    ({"timeout": 0}, "notify.timeout: must be a number of seconds in (0, 600], not 0"),
    ({"attempts": 11}, "notify.attempts: must be a whole number from 1 to 10, not 11"),
    ({"comand": ["x"]}, "notify: unknown key 'comand'"),
])
def test_a_bad_notify_setting_is_one_line_naming_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object, said: str
) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "ana.md").write_text("---\nprovider: claude\n---\nWork.\n", "utf-8")
    (team / "autodev.yaml").write_text(f"timezone: UTC\nnotify: {json.dumps(value)}\n", "utf-8")
    assert main(["run", str(team), "--run", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert said in err and "autodev.yaml" in err and ":2" in err
    assert not (tmp_path / "run").exists()


def test_urls_without_apprise_are_one_line_at_start_and_nothing_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "ana.md").write_text("---\nprovider: claude\n---\nWork.\n", "utf-8")
    (team / "autodev.yaml").write_text(
        "notify:\n  urls: ['ntfy://me:hunter22@ntfy.example/topic-s3cret']\n", "utf-8")
    monkeypatch.setitem(sys.modules, "apprise", None)  # import apprise raises ImportError
    assert load_team(team).notify.urls  # reading the team does not need it
    assert main(["run", str(team), "--run", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err == ("autodev: notify.urls (ntfy://me:***@ntfy.example/***) need Apprise: "
                   "pip install 'autodev[notify]'.\n")
    assert not (tmp_path / "run").exists()


# -- redaction ----------------------------------------------------------------------------------

_SECRET = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=6,
                  max_size=30)


@given(password=_SECRET, token=_SECRET, scheme=st.sampled_from(["json", "ntfy", "slack", "mailto"]))
def test_a_urls_password_and_path_never_show(password: str, token: str, scheme: str) -> None:
    url = f"{scheme}://user:{password}@host.example:8080/{token}?key={token}"
    shown = shown_url(url)
    assert password not in shown and token not in shown
    assert shown == f"{scheme}://user:***@host.example:8080/***"
    said = scrub(f"could not post to {url}: 401 for {token}", [url])
    assert password not in said and token not in said


def test_a_url_without_secrets_shows_whole() -> None:
    assert shown_url("json://127.0.0.1:8080") == "json://127.0.0.1:8080"
    assert shown_url("json://127.0.0.1:8080/hook") == "json://127.0.0.1:8080/***"


# -- delivery -----------------------------------------------------------------------------------

RECORDER = """\
import json, os, sys
data = sys.stdin.read()
with open(sys.argv[1], "a", encoding="utf-8") as out:
    out.write(json.dumps({"stdin": json.loads(data), "env": os.environ["AUTODEV_NOTICE"],
                          "event": os.environ["AUTODEV_EVENT"]}) + "\\n")
sys.exit(int(sys.argv[2]))
"""

NOTICE = {"run": "r1", "event": "empty-turns", "summary": "paused", "message": "m"}


def _recorder(tmp_path: Path, code: int = 0) -> tuple[list[str], Path]:
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER, "utf-8")
    out = tmp_path / "out.jsonl"
    return [sys.executable, str(script), str(out), str(code)], out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_command_gets_the_notice_as_json_on_stdin_and_in_its_env(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    said: list[str] = []
    notifier = Notifier(NotifySettings(tuple(argv)), say=said.append)
    notifier.submit(dict(NOTICE))
    notifier.close()
    got = _lines(out)
    assert [g["stdin"] for g in got] == [NOTICE]
    assert json.loads(got[0]["env"]) == NOTICE and got[0]["event"] == "empty-turns"
    assert said == [] and notifier.sent == 1


def test_a_failing_command_is_tried_attempts_times_then_one_line(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path, code=3)
    said: list[str] = []
    waits: list[float] = []
    notifier = Notifier(NotifySettings(tuple(argv), attempts=3), say=said.append,
                        sleep=waits.append)
    notifier.submit(dict(NOTICE))
    notifier.close()
    assert len(_lines(out)) == 3 and waits == [1.0, 4.0]
    assert said == ["notification to the notify command failed after 3 attempts (exit 3)"]


HANGS = """\
import subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
with open(sys.argv[1], "a", encoding="ascii") as out:
    out.write(f"{child.pid}\\n")
time.sleep(60)
"""


def test_a_hanging_command_never_blocks_the_run_and_is_cut_at_its_timeout(tmp_path: Path) -> None:
    from helpers.daemons import alive, wait_for

    pids = tmp_path / "pids"
    said: list[str] = []
    notifier = Notifier(NotifySettings((sys.executable, "-c", HANGS, str(pids)),
                                       timeout=0.5, attempts=1), say=said.append)
    started = time.monotonic()
    for _ in range(3):
        notifier.submit(dict(NOTICE))
    assert time.monotonic() - started < 0.25  # submitting only queues
    notifier.close()
    assert said == ["notification to the notify command failed after 1 attempt "
                    "(timed out after 0.5 s)"] * 3
    # What the command started went with it: its process group was killed.
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 3
    wait_for(lambda: not any(alive(pid) for pid in started), "the command's children gone", 10)


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.got.append((self.path, json.loads(body)))  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.got = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_a_json_webhook_url_gets_the_notice(hook: ThreadingHTTPServer) -> None:
    pytest.importorskip("apprise")
    url = f"json://127.0.0.1:{hook.server_address[1]}/hook/tok3n"
    said: list[str] = []
    notifier = Notifier(NotifySettings(urls=(url,)), say=said.append)
    notifier.submit(dict(NOTICE))
    notifier.close()
    got = hook.got  # type: ignore[attr-defined]
    assert len(got) == 1 and got[0][0] == "/hook/tok3n"
    assert got[0][1]["title"] == "autodev r1: paused" and got[0][1]["message"] == "m"
    assert said == []


def test_an_unreachable_url_fails_after_its_tries_with_the_url_redacted() -> None:
    pytest.importorskip("apprise")
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"json://admin:pa55word@127.0.0.1:{port}/hook/tok3n"
    said: list[str] = []
    notifier = Notifier(NotifySettings(urls=(url,), attempts=2, timeout=2), say=said.append,
                        sleep=lambda _s: None)
    notifier.submit(dict(NOTICE))
    notifier.close()
    assert said == [f"notification to json://admin:***@127.0.0.1:{port}/*** failed after 2 "
                    "attempts (not delivered)"]
    assert notifier.failed == 1


class _Scripted(Notifier):
    """A notifier whose command answers from a script of outcomes (True: delivered)."""

    def __init__(self, outcomes: list[bool], attempts: int, said: list[str]) -> None:
        self.outcomes = list(outcomes)
        self.tries: list[str] = []
        super().__init__(NotifySettings(("tell",), attempts=attempts), say=said.append,
                         sleep=lambda _s: None)

    def _run_command(self, notice: Any) -> None:
        self.tries.append(notice["message"])
        if not (self.outcomes.pop(0) if self.outcomes else True):
            raise RuntimeError("exit 1")


@given(count=st.integers(0, 8), attempts=st.integers(1, 4),
       outcomes=st.lists(st.booleans(), max_size=40))
def test_each_notice_is_delivered_once_or_told_failed_once_in_order(
    count: int, attempts: int, outcomes: list[bool]
) -> None:
    said: list[str] = []
    notifier = _Scripted(outcomes, attempts, said)
    for number in range(count):
        notifier.submit({**NOTICE, "message": f"n{number}"})
    notifier.close()
    # Tries come in the order submitted; a notice is tried until it is delivered or has had
    # `attempts` tries, never more, and never again after it was delivered.
    runs = [(m, len(list(g))) for m, g in itertools.groupby(notifier.tries)]
    assert [m for m, _n in runs] == [f"n{i}" for i in range(count)]
    assert all(1 <= n <= attempts for _m, n in runs)
    assert notifier.sent + notifier.failed == count
    assert len(said) == notifier.failed
    model = list(outcomes)
    failed = 0
    for _number in range(count):
        tries = 0
        while tries < attempts:
            tries += 1
            if model.pop(0) if model else True:
                break
        else:
            failed += 1
    assert notifier.failed == failed


def test_the_sharing_clients_lost_line_is_the_one_that_notifies() -> None:
    # docs/sharing.md: the client says this once when Redis is lost; notify.py matches its start.
    import inspect

    from autodev_shell.notify import SHARING_LOST
    from autodev_shell.sharing.client import LimitSharing

    assert f'f"{SHARING_LOST} (' in inspect.getsource(LimitSharing._lost)
