"""The CLI processes a daemon starts, and the ones a dead daemon left behind (C1).

Every call runs in its own process group (C1). To leave no CLI running without its daemon:

- on Linux the CLI is asked to die with the daemon (`prctl(PR_SET_PDEATHSIG, SIGKILL)` in the
  child before it runs the CLI), so a kill -9 of the daemon ends the CLI itself at once;
- the call's process group is recorded in the run store when it starts, with the start time
  of its leader (`/proc/<pid>/stat`), so that after a kill -9 the next daemon finds the group —
  the CLI's own children survive their parent — and ends it before it starts the owed turn.

A recorded group is ended only when it is still the one the dead daemon started: its leader is
alive with the recorded start time, or its leader is gone and processes are still in the group
(Linux never hands a pid out again while it is the id of a live process group).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

#: prctl(2) option: the signal the calling process gets when its parent dies.
_PR_SET_PDEATHSIG: Final = 1
#: How long a group gets to obey SIGTERM before SIGKILL.
END_GRACE_SECONDS: Final = 2.0


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl: Callable[..., int] = libc.prctl
    except (OSError, AttributeError):
        return None
    return prctl


# Loaded before any fork: the child only calls it (no imports, no allocation to speak of).
_PRCTL: Final = _load_prctl()


def die_with_parent(parent: int | None = None) -> None:
    """In the child, before exec: be killed when the daemon dies (Linux; elsewhere a no-op).
    With `parent` (the daemon's pid, taken before the fork): a daemon that died before the
    request was made leaves a child that ends at once instead of running the CLI."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if parent is not None and os.getppid() != parent:
            os._exit(1)


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (the state first, field 3), or None
    when there is no such process or no /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()


def start_ticks(pid: int) -> int | None:
    """The start time of `pid` (clock ticks after boot, /proc/<pid>/stat field 22), or None
    when there is no such process or no /proc."""
    fields = _stat_fields(pid)
    try:  # field 22 is index 19 after the command name
        return int(fields[19]) if fields is not None else None
    except (IndexError, ValueError):
        return None


def _state_and_group(pid: int) -> tuple[str, int] | None:
    fields = _stat_fields(pid)  # the state (field 3) and the process group (field 5)
    try:
        return (fields[0], int(fields[2])) if fields is not None else None
    except (IndexError, ValueError):
        return None


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`, from /proc."""
    members = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            found = _state_and_group(int(entry))
            if found is not None and found[1] == pgid and found[0] != "Z":
                members.append(int(entry))
    return members


def still_ours(pid: int, pgid: int, ticks: int | None) -> bool:
    """Whether the group recorded as (`pid`, `pgid`, `ticks`) is still the one we started."""
    now_ticks = start_ticks(pid)
    if now_ticks is not None:
        return ticks is not None and now_ticks == ticks and pgid in _pgid_of(pid)
    return bool(group_members(pgid))


def _pgid_of(pid: int) -> tuple[int, ...]:
    found = _state_and_group(pid)
    return () if found is None else (found[1],)


def end_group(pid: int, pgid: int, ticks: int | None, *,
              grace: float = END_GRACE_SECONDS) -> bool:
    """End the recorded call's process group if it is still ours: SIGTERM, then SIGKILL to what
    is left. Returns whether a group was found and signalled."""
    if pgid <= 1 or not still_ours(pid, pgid, ticks):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and group_members(pgid):
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and group_members(pgid):
        time.sleep(0.05)
    return True


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to a call's whole process group, if it is still there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the whole group of a running call, then SIGKILL to whatever is left of it
    (C1)."""
    signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    # Grandchildren may outlive (or ignore) the TERM the leader obeyed: kill the group.
    signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


__all__ = [
    "END_GRACE_SECONDS",
    "die_with_parent",
    "end_group",
    "group_members",
    "signal_group",
    "start_ticks",
    "still_ours",
    "stop_group",
]
