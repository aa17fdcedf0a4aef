"""Driving the real `autodev panel` command, a real daemon on the stand-in CLIs and Debian's
Chromium, for the browser tests, the panel benchmark and the docs screenshot (issue 23).

Nothing here decides what a test expects: it starts processes, finds the URL the panel prints
(`http://\\S+`, the page contract in docs/panel.md) and speaks plain HTTP to it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from helpers.daemons import RunCommands, operator_signals_default

from autodev_shell.panel.security import csrf_of
from autodev_shell.standins import install_standins, standin_env, write_script

#: Generous: the machine is shared and loaded; tests poll, never assert on timings.
WAIT = 60.0

#: Debian's browser (`apt-get install chromium`); never a browser downloaded at run time.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_MISSING = (
    "chromium is not installed: apt-get install chromium (Debian's package; .ci/run installs it)"
)
#: Playwright adds `--headless` itself (Chromium ≥ 132 has only the new headless mode, so
#: `--headless=new` would say nothing more). The rest keep a closed network quiet: without
#: them Chromium keeps trying Google's hosts and refused connections pile up.
CHROMIUM_ARGS = (
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-extensions",
)

#: What `autodev panel` needs (the `panel` extra); the tests skip, saying how to install it.
PANEL_MODULES = ("starlette", "uvicorn", "jinja2")
PANEL_MISSING = "the panel extra is not installed: pip install -e '.[panel]' (or '.[test]')"
PLAYWRIGHT_MISSING = "playwright is not installed: pip install -e '.[test]'"

URL = re.compile(r"http://\S+")


def panel_missing() -> str | None:
    """Why the panel cannot run here, or None."""
    import importlib.util

    for name in PANEL_MODULES:
        if importlib.util.find_spec(name) is None:
            return PANEL_MISSING
    return None


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless, driven by Playwright (never `playwright install`)."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS)
    )


def wait_for(predicate: Callable[[], object], what: str, seconds: float = WAIT) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------------
# A run: a team folder, the stand-ins and `autodev run --fast` on them


def participant_file(provider: str, body: str = "Work.", **front: Any) -> str:
    lines = [f"provider: {provider}"] + [f"{key}: {json.dumps(value)}" for key, value in
                                         front.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


class RunDaemon(RunCommands):
    """A team folder (participant files and `autodev.yaml`), the stand-in CLIs answering
    `script`, and the real daemon (`autodev run TEAM --run DIR --fast FACTOR`) on them."""

    def __init__(self, root: Path, members: Mapping[str, str], script: Mapping[str, Any], *,
                 order: tuple[str, ...] = (), fast: float = 1.0) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.team = root / "team"
        self.team.mkdir()
        for pid, text in members.items():
            (self.team / f"{pid}.md").write_text(text, encoding="utf-8")
        settings = "commands:\n  claude: {timeout: 60}\n  codex: {timeout: 60}\n" \
                   "  agy: {timeout: 60}\n"
        if order:
            settings = f"order: [{', '.join(order)}]\n" + settings
        (self.team / "autodev.yaml").write_text(settings, encoding="utf-8")
        self.run_dir = root / "run"
        self.fast = fast
        bin_dir = install_standins(root / "bin")
        self.script = write_script(root / "script.json", dict(script))
        self.env = standin_env(bin_dir, self.script, log=root / "calls.jsonl")
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "daemon.stderr"

    def start(self) -> RunDaemon:
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "autodev_shell.cli", "run", str(self.team), "--run",
                 str(self.run_dir), "--fast", repr(self.fast)],
                env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                start_new_session=True, preexec_fn=operator_signals_default,
            )
        wait_for(lambda: (self.run_dir / "run.db").exists() or self.proc.poll() is not None,
                 "the daemon's store")
        if self.proc.poll() is not None:
            raise AssertionError(f"the daemon exited: {self.log.read_text(errors='replace')}")
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Stop the daemon (through the control table; killed if it does not go)."""
        if not self.running():
            return
        assert self.proc is not None
        self.cli("stop")
        try:
            self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=WAIT)

    # --- what the run holds (read through the store, as `autodev status` does) ----------

    def status(self) -> dict[str, Any]:
        done = self.cli("status", "--json")
        assert done.returncode == 0, done.stderr
        value: dict[str, Any] = json.loads(done.stdout)
        return value

    def posts(self) -> list[tuple[int, str, str]]:
        """(revision, participant, text) of every post, in thread order."""
        from autodev_shell.store.run_store import RunStore

        db = self.run_dir / "run.db"
        if not db.exists():
            return []
        store = RunStore.open(db, check=False)
        try:
            return [(p.revision, p.participant, p.text) for p in store.thread()]
        finally:
            store.close()

    def controls(self) -> list[tuple[str, str]]:
        """(command, arg) of every control ever queued, taken or not."""
        import sqlite3

        conn = sqlite3.connect(f"file:{self.run_dir / 'run.db'}?mode=ro", uri=True)
        try:
            return [(str(c), str(a)) for c, a in
                    conn.execute("SELECT command, arg FROM controls ORDER BY id")]
        finally:
            conn.close()


# ------------------------------------------------------------------------------------------------
# The panel: the real command in a subprocess


class Response:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def all(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<{self.status} {self.text[:200]!r}>"


class Panel:
    """`autodev panel --run DIR [--team DIR] --port P` in its own process."""

    def __init__(self, run_dir: Path, *, team: Path | None = None, port: int = 0,
                 read_only: bool = False, log: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.run_dir = run_dir
        self.team = team
        self.port = port
        self.read_only = read_only
        self.log = log or run_dir.parent / "panel.stderr"
        self.env = dict(env or os.environ)
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.token = ""
        self.lines: list[str] = []
        self._cookie: str | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def origin(self) -> str:
        return self.base

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        argv = [sys.executable, "-m", "autodev_shell.cli", "panel", "--run", str(self.run_dir),
                "--port", str(self.port)]
        if self.team is not None:
            argv += ["--team", str(self.team)]
        if self.read_only:
            argv.append("--read-only")
        return argv

    def start(self) -> Panel:
        self.lines = []
        self._cookie = None
        with open(self.log, "a", encoding="utf-8") as err:
            self.proc = subprocess.Popen(
                self.command(), env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=err, text=True, start_new_session=True,
                preexec_fn=operator_signals_default,
            )
        threading.Thread(target=self._read_stdout, args=(self.proc,), daemon=True).start()
        url = wait_for(lambda: self._url() or self._exited(), "the panel's URL")
        if not isinstance(url, str):
            raise AssertionError(f"`autodev panel` exited {self.proc.returncode}: "
                                 f"{self.lines} {self.log.read_text(errors='replace')[-2000:]}")
        self.url = url
        parts = urlsplit(url)
        assert parts.port is not None, url
        self.port = parts.port
        self.token = parse_qs(parts.query).get("token", [""])[0]
        return self

    def _read_stdout(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line)

    def _url(self) -> str | None:
        for line in self.lines:
            found = URL.search(line)
            if found:
                return found.group(0)
        return None

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def stop(self) -> int | None:
        """SIGTERM and wait; the exit code (None if it had to be killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return None

    def restart(self) -> Panel:
        """Stop it and start it again on the same port."""
        self.stop()
        return self.start()

    def rss_kib(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    # --- plain HTTP -------------------------------------------------------------------

    def request(self, method: str, path: str, *, body: bytes | str | None = None,
                headers: Mapping[str, str] | None = None, host: str | None = None,
                cookie: bool = True, timeout: float = 30.0) -> Response:
        """One request on a fresh connection; `host` replaces the Host header; `cookie` sends
        the session cookie (taken with the token first)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", host or self.host)
            sent = {k.lower() for k in (headers or {})}
            if cookie and "cookie" not in sent:
                conn.putheader("Cookie", self.cookie())
            for key, value in (headers or {}).items():
                conn.putheader(key, value)
            data = body.encode("utf-8") if isinstance(body, str) else body
            if data is not None:
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders(data)
            answer = conn.getresponse()
            return Response(answer.status, answer.getheaders(), answer.read())
        finally:
            conn.close()

    def cookie(self) -> str:
        """`autodev_panel=…`, from exchanging the token as a browser does (GET /?token=T)."""
        if self._cookie is None:
            answer = self.request("GET", f"/?token={self.token}", cookie=False)
            assert answer.status in (302, 303, 307), answer
            jar = SimpleCookie()
            for value in answer.all("set-cookie"):
                jar.load(value)
            assert "autodev_panel" in jar, answer.headers
            self._cookie = f"autodev_panel={jar['autodev_panel'].value}"
        return self._cookie

    def post(self, path: str, body: str = "", *, content_type: str =
             "application/x-www-form-urlencoded", headers: Mapping[str, str] | None = None,
             csrf: bool = True, origin: bool = True) -> Response:
        """A POST as the page sends it: the CSRF header and a same-origin Origin."""
        sent = {"Content-Type": content_type}
        if csrf:
            sent["X-Autodev-CSRF"] = csrf_of(self.token)  # derived, as the page's
        if origin:
            sent["Origin"] = self.origin
        sent.update(headers or {})
        return self.request("POST", path, body=body, headers=sent)


@contextlib.contextmanager
def panel_over(daemon: RunDaemon, root: Path) -> Iterator[tuple[RunDaemon, Panel]]:
    """The panel over `daemon`'s run; the panel, then the daemon, stopped after."""
    panel = Panel(daemon.run_dir, team=daemon.team, log=root / "panel.stderr").start()
    try:
        yield daemon, panel
    finally:
        panel.stop()
        daemon.stop()


def sse_events(raw: str) -> list[dict[str, str]]:
    """Parse a text/event-stream body into events ({"event", "id", "data"}), comments aside."""
    events: list[dict[str, str]] = []
    blocks = re.split(r"\r?\n\r?\n", raw)
    for block in blocks[:-1]:  # the last is not yet ended by a blank line: not dispatched
        event: dict[str, str] = {}
        data: list[str] = []
        for line in block.splitlines():
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name in ("event", "id", "retry"):
                event[name] = value
        if data or event:
            event["data"] = "\n".join(data)
            events.append(event)
    return events


def read_sse(panel: Panel, *, seconds: float, last_event_id: str | None = None,
             until: Callable[[list[dict[str, str]]], bool] | None = None) -> list[dict[str, str]]:
    """Read /events for up to `seconds` (or until `until(events)`), as EventSource would."""

    conn = http.client.HTTPConnection("127.0.0.1", panel.port, timeout=seconds)
    headers = {"Cookie": panel.cookie(), "Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    conn.request("GET", "/events", headers=headers)
    answer = conn.getresponse()
    assert answer.status == 200, (answer.status, answer.read()[:300])
    buffer = b""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            conn.sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = answer.read1(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            buffer += chunk
            if until is not None and until(sse_events(buffer.decode("utf-8", "replace"))):
                break
    finally:
        conn.close()
    return sse_events(buffer.decode("utf-8", "replace"))
