"""Telling the operator when the run needs them: `notify:` in autodev.yaml (docs/notifications.md).

Which moments notify is read off the log, never decided here: a core line whose kind is in
`NOTIFYING_KINDS` (a pause: A29 `gave-up`, A31 `empty-turns`, A32 `not-logged-in`, each notice
naming its reason as `paused_for`; A18 `wait-limited`, every participant limited, told once until
someone posts again), the status `stopped` (A42), the daemon's own line when a signal ends it
(`daemon ended by SIGTERM`, told as `stopped` too), and the sharing client's "limit sharing lost"
note (docs/sharing.md). Each such line becomes one notice, sent by a worker
thread to a command (the notice as JSON on stdin and in `AUTODEV_NOTICE`) and to notification URLs
in Apprise's scheme (the optional `notify` extra). Delivery never blocks the run: the daemon only
puts the notice on a bounded queue; each target gets `attempts` tries, `timeout` seconds each. A
URL is written redacted in every line (`shown_url`): its secrets are its password and its path.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import attrs

from autodev_core.errors import AutodevError, ConfigError
from autodev_core.names import PAUSE_NEEDS

if TYPE_CHECKING:
    from autodev_core.scheduler import Log

#: The core's log kinds that notify, each with the event's one-word summary (docs/notifications.md).
NOTIFYING_KINDS: Final[Mapping[str, str]] = {
    "gave-up": "paused",  # A29: twelve failed attempts in a row
    "empty-turns": "paused",  # A31: three turns in a row without a post
    "not-logged-in": "paused",  # A32: log in, then resume
    "wait-limited": "waiting",  # A18: every participant limited
}
#: Why each pausing kind paused the run (`SchedulerState.paused_for`), named in its notice.
PAUSED_FOR: Final[Mapping[str, str]] = {
    "gave-up": "failures",  # A29
    "empty-turns": "empty",  # A31
    "not-logged-in": "login",  # A32
}
#: The kind that notifies once per episode: until some participant posts again (its kind).
ONCE_UNTIL_POSTED: Final = "wait-limited"
POSTED: Final = "posted"
#: The statuses that notify (A42): a stopped run needs someone to start it again.
NOTIFYING_STATUSES: Final = ("stopped",)
#: The sharing client's line when the shared registry is lost (docs/sharing.md).
SHARING_LOST: Final = "limit sharing lost"
#: The daemon's own line when SIGTERM, SIGHUP or Ctrl-C ends it (cli/commands.py `_drive`):
#: the run is over until `autodev run` again, told as `stopped`.
DAEMON_ENDED: Final = "daemon ended by "
#: Defaults of `notify:` (docs/notifications.md).
DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_ATTEMPTS: Final = 3
#: Seconds between two tries of one target (then the last one again): bounded, never blocking.
RETRY_WAITS: Final = (1.0, 4.0, 15.0)
#: Notices waiting for the worker; past this a notice is dropped with a line saying so.
QUEUE_BOUND: Final = 100
#: How long a stopping daemon waits for notices still in flight (its last one is "stopped").
CLOSE_WAIT: Final = 30.0
NOTIFY_KEYS: Final = ("command", "urls", "timeout", "attempts")


@attrs.frozen
class NotifySettings:
    """`notify:` as read: the command's argv, the URLs, and each target's timeout and tries."""

    command: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    attempts: int = DEFAULT_ATTEMPTS

    @property
    def enabled(self) -> bool:
        return bool(self.command or self.urls)


def notify_settings(value: Any, *, source: str, line: int | None = None) -> NotifySettings:
    """Read `notify:` from autodev.yaml; a mistake is a ConfigError naming the field."""
    if value is None:
        return NotifySettings()
    if not isinstance(value, dict):
        raise ConfigError("notify: must be a mapping with command: and/or urls:",
                          source=source, line=line)
    for key in value:
        if key not in NOTIFY_KEYS:
            raise ConfigError(f"notify: unknown key {key!r} (known keys: "
                              f"{', '.join(NOTIFY_KEYS)})", source=source, line=line)
    command = value.get("command") or []
    if not isinstance(command, list) or not all(isinstance(a, str) and a for a in command):
        raise ConfigError("notify.command: must be a list of arguments (argv), e.g. "
                          '["notify-send", "autodev"]', source=source, line=line)
    urls = value.get("urls") or []
    if isinstance(urls, str):
        urls = [urls]
    if not isinstance(urls, list) or not all(isinstance(u, str) and "://" in u for u in urls):
        raise ConfigError("notify.urls: must be a list of notification URLs such as "
                          "json://host:port/path or ntfy://topic", source=source, line=line)
    timeout = value.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
        raise ConfigError(f"notify.timeout: must be a number of seconds in (0, 600], not "
                          f"{timeout!r}", source=source, line=line)
    attempts = value.get("attempts", DEFAULT_ATTEMPTS)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 10:
        raise ConfigError(f"notify.attempts: must be a whole number from 1 to 10, not "
                          f"{attempts!r}", source=source, line=line)
    return NotifySettings(tuple(command), tuple(urls), float(timeout), attempts)


def shown_url(url: str) -> str:
    """A URL as every line writes it: its scheme, user and host; password, path and query (where
    services keep their tokens: `slack://T/B/C`, `ntfy://user:pass@host/topic`) as `***`."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return url.split("://", 1)[0] + "://***"
    user = f"{parts.username}:***@" if parts.password else (
        f"{parts.username}@" if parts.username else "")
    rest = "/***" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{user}{host}{port}{rest}"


def scrub(text: str, urls: Sequence[str]) -> str:
    """`text` with every URL of `urls`, and each of its secret parts, written as `shown_url`."""
    for url in urls:
        text = text.replace(url, shown_url(url))
        try:
            parts = urlsplit(url)
        except ValueError:
            continue
        for secret in (parts.password, parts.path.strip("/"), parts.query):
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***")
    return text


# -- which lines notify (the table above, nothing more) ----------------------------------------


def notice_of_entry(log: Log, run: str) -> dict[str, Any] | None:
    """The notice a core line makes, or None when its kind does not notify."""
    from autodev_core.scheduler.effects import log_fields

    summary = NOTIFYING_KINDS.get(log.kind)
    if summary is None:
        return None
    record = log_fields(log)
    notice: dict[str, Any] = {"run": run, "event": record.pop("kind"), "summary": summary}
    reason = PAUSED_FOR.get(log.kind)
    if reason is not None:
        notice["paused_for"] = reason
        notice["reason"] = PAUSE_NEEDS[reason]
    notice.update(record)
    return notice


def notice_of_status(at: datetime, status: str, run: str, last: str) -> dict[str, Any] | None:
    if status not in NOTIFYING_STATUSES:
        return None
    return {"run": run, "event": status, "summary": status, "at": at.isoformat(),
            "message": last or f"run {status}"}


def notice_of_note(at: datetime, message: str, run: str) -> dict[str, Any] | None:
    if message.startswith(DAEMON_ENDED):
        return {"run": run, "event": "stopped", "summary": "stopped", "at": at.isoformat(),
                "message": message}
    if not message.startswith(SHARING_LOST):
        return None
    return {"run": run, "event": "sharing-lost", "summary": "sharing lost",
            "at": at.isoformat(), "message": message}


# -- delivery ---------------------------------------------------------------------------------


def apprise_available() -> bool:
    try:
        import apprise  # noqa: F401
    except ImportError:
        return False
    return True


def check_settings(settings: NotifySettings) -> None:
    """At start: URLs without Apprise installed are one clear line, and the run does not start."""
    if settings.urls and not apprise_available():
        shown = ", ".join(shown_url(u) for u in settings.urls)
        raise AutodevError(f"notify.urls ({shown}) need Apprise: pip install 'autodev[notify]'.")


def title_of(notice: Mapping[str, Any]) -> str:
    """`autodev <run>: <summary>`, and for a pause its reason: `autodev team: paused — login
    needed`."""
    title = f"autodev {notice.get('run', '')}: {notice.get('summary', notice.get('event'))}"
    reason = notice.get("reason")
    return f"{title} — {reason}" if reason else title


class Notifier:
    """Sends notices on a worker thread: `submit` never blocks the run. `say` gets a line when a
    target fails after its last try (redacted), from the worker thread."""

    def __init__(
        self,
        settings: NotifySettings,
        *,
        say: Callable[[str], None],
        sleep: Callable[[float], None] = time.sleep,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.say = say
        self.sleep = sleep
        self.env = dict(os.environ if env is None else env)
        self.sent = 0
        self.failed = 0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE_BOUND)
        self._thread = threading.Thread(target=self._work, name="autodev-notify", daemon=True)
        self._thread.start()

    def submit(self, notice: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(notice)
        except queue.Full:
            self.say(f"notification dropped ({QUEUE_BOUND} waiting): {notice.get('message')}")

    def close(self, wait: float = CLOSE_WAIT) -> None:
        """Let the notices in flight go out (up to `wait` seconds), then stop the worker."""
        try:
            self._queue.put(None, timeout=wait)
        except queue.Full:
            return
        self._thread.join(wait)

    def _work(self) -> None:
        while True:
            notice = self._queue.get()
            if notice is None:
                return
            if self.settings.command:
                self._deliver("the notify command", partial(self._run_command, notice))
            for url in self.settings.urls:
                self._deliver(shown_url(url), partial(self._send_url, url, notice))

    def _deliver(self, target: str, send: Callable[[], None]) -> None:
        reason = ""
        for attempt in range(self.settings.attempts):
            if attempt:
                self.sleep(RETRY_WAITS[min(attempt - 1, len(RETRY_WAITS) - 1)])
            try:
                send()
            except Exception as exc:  # a notifier never stops the run; it says why once
                reason = scrub(str(exc) or type(exc).__name__, self.settings.urls)
                continue
            self.sent += 1
            return
        self.failed += 1
        tries = self.settings.attempts
        self.say(f"notification to {target} failed after {tries} "
                 f"attempt{'s' if tries != 1 else ''} ({reason})")

    def _run_command(self, notice: Mapping[str, Any]) -> None:
        text = json.dumps(notice, ensure_ascii=False)
        env = {**self.env, "AUTODEV_NOTICE": text, "AUTODEV_EVENT": str(notice.get("event"))}
        try:
            proc = subprocess.Popen(
                list(self.settings.command), stdin=subprocess.PIPE, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise RuntimeError(f"cannot run {self.settings.command[0]}: {exc.strerror}") from None
        try:
            _out, err = proc.communicate(text.encode("utf-8"), timeout=self.settings.timeout)
        except subprocess.TimeoutExpired:
            with suppress(OSError):  # the command and whatever it started (its own group)
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise RuntimeError(f"timed out after {self.settings.timeout:g} s") from None
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:]
            raise RuntimeError(f"exit {proc.returncode}" + (f": {tail[0][:200]}" if tail else ""))

    def _send_url(self, url: str, notice: Mapping[str, Any]) -> None:
        import apprise

        sender = apprise.Apprise()
        asset_url = url
        if "?" not in url and self.settings.timeout:
            # Apprise's own socket timeouts (`cto`, `rto`), so one try never outlasts `timeout`.
            asset_url = f"{url}?cto={self.settings.timeout:g}&rto={self.settings.timeout:g}"
        if not sender.add(asset_url):
            raise RuntimeError("not a notification URL Apprise knows")
        body = str(notice.get("message", ""))
        if not sender.notify(title=title_of(notice), body=body):
            raise RuntimeError("not delivered")


class NotifyingLog:
    """A log sink that writes through `inner` and hands each notifying line to a `Notifier`.

    Every call to the inner sink holds one lock: the notifier's worker writes its failure lines
    through here too, never in the middle of the daemon's."""

    def __init__(self, inner: Any, notifier: Notifier | None, run: str,
                 listeners: Sequence[Any] = ()) -> None:
        self.inner = inner
        self.notifier = notifier
        self.run = run
        self.listeners = tuple(listeners)
        self._lock = threading.RLock()
        self._last = ""
        #: A18's wait was told and nobody has posted since: the same episode, not told again.
        self._limited_told = False

    def __getattr__(self, name: str) -> Any:  # `lines`, `zone`, `file_failed`, … of the inner
        return getattr(self.inner, name)

    def _notify(self, notice: dict[str, Any] | None) -> None:
        if notice is not None and self.notifier is not None:
            self.notifier.submit(notice)

    def line(self, at: datetime, message: str) -> None:
        with self._lock:
            self.inner.line(at, message)
            self._last = message

    def entry(self, log: Log) -> None:
        with self._lock:
            self.inner.entry(log)
            for listener in self.listeners:
                listener.entry(log)
            self._last = log.message
            if log.kind == POSTED:
                self._limited_told = False  # a post ends the episode
            notice = notice_of_entry(log, self.run)
            if log.kind == ONCE_UNTIL_POSTED:
                notice = None if self._limited_told else notice
                self._limited_told = True
            self._notify(notice)

    def status(self, at: datetime, status: str) -> None:
        with self._lock:
            self.inner.status(at, status)
            for listener in self.listeners:
                listener.status(at, status)
            self._notify(notice_of_status(at, status, self.run, self._last))

    def control(self, at: datetime, command: str) -> None:
        with self._lock:
            self.inner.control(at, command)
            for listener in self.listeners:
                listener.control(at, command)
            self._last = f"{command} requested"

    def note(self, at: datetime, message: str) -> None:
        with self._lock:
            self.inner.note(at, message)
            for listener in self.listeners:
                listener.note(at, message)
            self._notify(notice_of_note(at, message, self.run))

    def say(self, at: datetime, message: str) -> None:
        """A line from the notifier itself (not a notice: that would loop)."""
        with self._lock:
            self.inner.note(at, message)

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.close()
        for listener in self.listeners:
            listener.close()
        self.inner.close()


__all__ = [
    "NOTIFYING_KINDS", "NOTIFYING_STATUSES", "PAUSED_FOR", "Notifier", "NotifySettings",
    "NotifyingLog", "check_settings", "notice_of_entry", "notice_of_note", "notice_of_status",
    "notify_settings", "shown_url",
]


def observed_log(inner: Any, settings: NotifySettings, *, run: str, run_dir: os.PathLike[str],
                 now: Callable[[], datetime]) -> NotifyingLog:
    """The daemon's log sink: `inner`, the run's events file (docs/timeline.md) and, when
    `notify:` names a target, a `Notifier` whose failure lines go to the log."""
    from pathlib import Path

    from .story.record import EVENTS_FILE, EventsFile

    events = EventsFile(Path(run_dir) / EVENTS_FILE)
    sink = NotifyingLog(inner, None, run, listeners=(events,))
    if settings.enabled:
        sink.notifier = Notifier(settings, say=lambda line: sink.say(now(), line))
    return sink
