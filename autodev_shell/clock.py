"""Clocks: where the shell reads wall-clock time and waits (SPEC C2, A19, A20, C6).

The core never reads a clock (0.1); the shell reads one of these and hands `now` to it.

- `SystemClock`: the machine's wall clock; waits in real time.
- `ScaledClock`: virtual time running `factor` times faster than real time (`autodev run
  --fast`): a 2-hour limit wait passes in 12 real seconds at `factor=600`.
- `VirtualClock`: the demo's clock (C6). Virtual time passes only when the shell waits (a wait
  of `s` virtual seconds takes `s / factor` real seconds) and when a call is charged its
  duration (a stand-in writes it to the clock's ledger file): real time spent starting
  processes or writing the store passes none, so a run tells the same story on any machine.
- `FakeClock`: for tests. Waiting advances it at once; tests move it forward or backward
  (a suspended machine, a corrected clock) from hooks that run inside a wait.

`wait(seconds, interrupt)` returns early, within `POLL_SECONDS` real seconds, when the interrupt
is set: a `threading.Event` (woken at once) or a callable polled at that interval.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Protocol, TypeAlias
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

#: Something that says "stop waiting": an Event, a callable, or nothing.
Interrupt: TypeAlias = threading.Event | Callable[[], bool] | None

#: A callable interrupt is polled this often, in real seconds (A19: stop/pause wake within 1 s).
POLL_SECONDS = 0.2


def is_set(interrupt: Interrupt) -> bool:
    """Whether `interrupt` says stop now."""
    if interrupt is None:
        return False
    if isinstance(interrupt, threading.Event):
        return interrupt.is_set()
    return bool(interrupt())


def _real_wait(seconds: float, interrupt: Interrupt) -> bool:
    """Wait up to `seconds` real seconds; True when cut short by `interrupt`."""
    if seconds <= 0:
        return is_set(interrupt)
    if interrupt is None:
        time.sleep(seconds)
        return False
    if isinstance(interrupt, threading.Event):
        return interrupt.wait(seconds)
    deadline = time.monotonic() + seconds
    while True:
        if interrupt():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(POLL_SECONDS, left))


def local_zone(environ: Mapping[str, str] | None = None) -> tzinfo:
    """The zone a process with the environment `environ` (None: this one's) keeps its clock in,
    as a named zone when it can be found (A3, A6: the clock times a CLI prints are read in its
    zone): its `$TZ`, else the machine's `/etc/localtime` link, else the current fixed offset."""
    candidates: list[str] = []
    tz_env = (os.environ if environ is None else environ).get("TZ", "").lstrip(":")
    if tz_env:
        candidates.append(tz_env)
    try:
        target = str(Path("/etc/localtime").resolve())
        if "/zoneinfo/" in target:
            candidates.append(target.split("/zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    return datetime.now().astimezone().tzinfo or UTC


class Clock(Protocol):
    """Wall-clock time and a way to wait for some of it to pass."""

    def now(self) -> datetime:
        """The current wall-clock time, aware."""
        ...

    def wait(self, seconds: float, interrupt: Interrupt = None) -> bool:
        """Let `seconds` of this clock's time pass; True when `interrupt` cut the wait short."""
        ...


class SystemClock:
    """The machine's wall clock (UTC, aware). Waits in real time."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def wait(self, seconds: float, interrupt: Interrupt = None) -> bool:
        return _real_wait(seconds, interrupt)


class ScaledClock:
    """Virtual time that runs `factor` times faster than real time, from `start` (demo, C6)."""

    def __init__(self, factor: float, *, start: datetime | None = None) -> None:
        if factor <= 0:
            raise ValueError(f"a clock's speed factor must be positive, not {factor!r}")
        if start is not None and start.utcoffset() is None:
            raise ValueError("ScaledClock start must be an aware datetime")
        self.factor = float(factor)
        self._start = start if start is not None else datetime.now(UTC)
        self._origin = time.monotonic()

    def now(self) -> datetime:
        elapsed = (time.monotonic() - self._origin) * self.factor
        return self._start + timedelta(seconds=elapsed)

    def wait(self, seconds: float, interrupt: Interrupt = None) -> bool:
        return _real_wait(seconds / self.factor, interrupt)


class VirtualClock:
    """Virtual time that passes only by waiting and by calls' charges (the demo, C6).

    - `wait(s)` takes `s / factor` real seconds and moves the clock by exactly `s` (when an
      interrupt cuts it short: by the real time waited × `factor`, at most `s`);
    - each line of the `ledger` file is a number of virtual seconds a call took: the stand-in
      CLIs append their scripted duration there before they answer (`standins.CLOCK_ENV`), so
      the call's end, and every reset measured from it (A38), is read after the charge;
    - nothing else moves it: the real time a subprocess takes to start, a slow disk, a loaded
      machine, pass no virtual time. The same script gives the same run, to the second.
    """

    def __init__(
        self, factor: float, *, start: datetime, ledger: str | os.PathLike[str] | None = None
    ) -> None:
        if not (0 < factor < float("inf")):
            raise ValueError(f"a clock's speed factor must be a positive number, not {factor!r}")
        if start.utcoffset() is None:
            raise ValueError("VirtualClock start must be an aware datetime")
        self.factor = float(factor)
        self.ledger = Path(ledger) if ledger is not None else None
        self._start = start
        self._waited = 0.0
        self._charged = 0.0
        self._read = 0  # bytes of the ledger already added up (whole lines only)
        self._lock = threading.Lock()

    def _read_ledger(self) -> None:
        if self.ledger is None:
            return
        try:
            with open(self.ledger, "rb") as handle:
                handle.seek(self._read)
                data = handle.read()
        except FileNotFoundError:
            return
        whole = data[: data.rfind(b"\n") + 1]  # a line still being written counts later
        self._read += len(whole)
        for line in whole.split(b"\n"):
            try:
                seconds = float(line)
            except ValueError:
                continue  # an empty or garbled line charges nothing
            if 0 <= seconds < float("inf"):
                self._charged += seconds

    def charged(self) -> float:
        """The virtual seconds charged by calls so far."""
        with self._lock:
            self._read_ledger()
            return self._charged

    def now(self) -> datetime:
        with self._lock:
            self._read_ledger()
            return self._start + timedelta(seconds=self._waited + self._charged)

    def wait(self, seconds: float, interrupt: Interrupt = None) -> bool:
        if seconds <= 0:
            return is_set(interrupt)
        began = time.monotonic()
        cut = _real_wait(seconds / self.factor, interrupt)
        passed = min(seconds, (time.monotonic() - began) * self.factor) if cut else seconds
        with self._lock:
            self._waited += passed
        return cut


#: A hook run inside `FakeClock.wait`: it gets the clock and the seconds asked for.
WaitHook: TypeAlias = Callable[["FakeClock", float], None]


class FakeClock:
    """A clock for tests: `wait` advances it instantly; `advance`/`set` move it either way.

    `on_wait` hooks run at the start of each wait (before time passes), in order of the waits:
    hook `i` runs in wait number `i` (0-based). A hook may move the clock (a suspend, a
    backward correction) or set an interrupt; if the interrupt is set after the hooks ran, the
    wait returns at once without advancing time.
    """

    def __init__(self, start: datetime) -> None:
        if start.utcoffset() is None:
            raise ValueError("FakeClock start must be an aware datetime")
        self._now = start
        self.waits: list[float] = []
        self._hooks: dict[int, list[WaitHook]] = {}
        self._every: list[WaitHook] = []
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock by `seconds` (negative: backward)."""
        with self._lock:
            self._now += timedelta(seconds=seconds)

    def set(self, when: datetime) -> None:
        if when.utcoffset() is None:
            raise ValueError("FakeClock.set needs an aware datetime")
        with self._lock:
            self._now = when

    def on_wait(self, index: int, hook: WaitHook) -> None:
        """Run `hook` at the start of wait number `index` (0-based)."""
        self._hooks.setdefault(index, []).append(hook)

    def on_every_wait(self, hook: WaitHook) -> None:
        """Run `hook` at the start of every wait, after the hooks for that wait's number."""
        self._every.append(hook)

    def wait(self, seconds: float, interrupt: Interrupt = None) -> bool:
        index = len(self.waits)
        self.waits.append(seconds)
        for hook in [*self._hooks.pop(index, []), *self._every]:
            hook(self, seconds)
        if is_set(interrupt):
            return True
        self.advance(max(seconds, 0.0))
        return False
