"""What the tests of sharing over a real redis-server hold in common (docs/sharing.md): the
team's engines, the settings of a run on one server, and a patient wait for what a subscriber
hears."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from autodev_core.engine import Engine

if TYPE_CHECKING:
    from helpers.redis_server import RedisServer

    from autodev_shell.sharing import ShareSettings

CLAUDE = Engine("claude")
SONNET = Engine("claude", "sonnet")
CODEX = Engine("codex")
TEAM = [CLAUDE, SONNET, CODEX]
WAIT = 30.0  # seconds: a loaded machine is slow, never this slow


def settings_for(server: RedisServer, name: str, prefix: str, *,
                 timeout: float = 0.25) -> ShareSettings:
    """A run named `name` sharing claude and codex accounts on `server`, keys under `prefix`."""
    from autodev_shell.sharing import ShareSettings

    return ShareSettings(url=server.url, accounts={"claude": "work-max", "codex": "team"},
                         name=name, prefix=prefix, timeout=timeout)


def wait_for(what: Callable[[], object]) -> None:
    """Until `what()` is true, or fail after `WAIT` seconds."""
    deadline = time.monotonic() + WAIT
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
