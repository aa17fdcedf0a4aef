"""`autodev panel` (docs/panel.md): watch and steer one run in a browser.

A part of the shell: it reads the run's store read-only and queues controls in the store's
control table as `autodev say|pause|resume|stop` do; it never signals a process. Needs the
`panel` extra (`pip install 'autodev[panel]'`): Starlette, uvicorn, Jinja2. docs/panel.md.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from autodev_core.errors import AutodevError

from ..private import write_private_text

#: What `autodev panel` says without the extra.
MISSING_EXTRA = ("autodev panel needs its web server: pip install 'autodev[panel]' "
                 "(Starlette, uvicorn and Jinja2)")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise AutodevError(f"the panel cannot listen on {host}:{port} ({exc.strerror})") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


#: The port the run's last panel listened on: a panel started again without --port takes it
#: again when it is free, so the pages the last one served find it (docs/panel.md).
PORT_FILE = "panel.port"


def _bind_again(run: Path, host: str) -> socket.socket | None:
    """The last panel's port of this run when it is free, else None (a new port is chosen)."""
    try:
        text = (run / PORT_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.isdigit() or not 0 < int(text) < 65536:
        return None
    try:
        return _bind(host, int(text))
    except AutodevError:
        return None


def _write_port(run: Path, port: int) -> None:
    import contextlib

    with contextlib.suppress(OSError):  # a read-only run folder: the next panel picks a port
        write_private_text(run / PORT_FILE, f"{port}\n")


# Long for the checks a user sees before the server starts, each one sentence (C6).
def serve(run_dir: str | Path, *, team_dir: str | Path | None = None, host: str = "127.0.0.1",
          port: int = 0, read_only: bool = False, token: str | None = None,
          out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Serve the panel of the run in `run_dir` until SIGINT/SIGTERM; prints its URL (with
    the one-time token) as one line on `out` once it listens. Returns the exit code."""
    import uvicorn

    from ..store.folder import run_db
    from .app import build_app
    from .security import (
        host_label,
        is_loopback,
        kept_token,
        new_token,
        read_only_token,
        write_token_file,
    )

    out = out or sys.stdout
    err = err or sys.stderr
    run = Path(run_dir)
    if not run_db(run).exists():
        raise AutodevError(f"There is no run at {run} (no run.db); start one with `autodev run "
                           f"TEAM_DIR --run {run}`.")
    team = Path(team_dir) if team_dir is not None else None
    if team is not None:
        from autodev_core.errors import ConfigError

        from ..team import load_team

        if not team.is_dir():
            raise ConfigError("not a team directory (it does not exist or is not a folder)",
                              source=str(team))
        try:
            load_team(team)
        except ConfigError as exc:  # the panel is where it can be repaired: said, not refused
            print(f"autodev panel: the team does not load ({exc}); each participant's file "
                  "still opens in Edit prompt, to repair it", file=err, flush=True)
    if not is_loopback(host):
        print(f"autodev panel: WARNING: listening on {host}, not on loopback: anyone who can "
              "reach this address and learns the token can steer the run. The token travels "
              "over plain HTTP.", file=err, flush=True)
    token = token or kept_token(run) or new_token()  # a restart keeps the pages' sessions
    sock = _bind_again(run, host) if port == 0 else None
    sock = sock or _bind(host, port)
    bound = sock.getsockname()[1]
    write_token_file(run, token)
    _write_port(run, bound)
    app, _panel = build_app(run, team_dir=team, token=token, host=host, port=bound,
                            read_only=read_only)
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    if host in ("127.0.0.1", "localhost", "::1", "[::1]"):
        # A host name of its own (`p-<label>.localhost`, loopback in every browser): the
        # session's cookie is then sent to no other server on this machine (cookies ignore
        # ports, not host names). The loopback names still answer (docs/panel.md).
        shown = f"{host_label(token)}.localhost"
    given = read_only_token(token) if read_only else token
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=2, server_header=False,
                            date_header=False)
    server = uvicorn.Server(config)
    url = f"http://{shown}:{bound}/?token={given}"

    original_startup = server.startup

    async def startup(sockets: list[socket.socket] | None = None) -> None:
        await original_startup(sockets=sockets)
        print(f"autodev panel: {url}", file=out, flush=True)

    server.startup = startup  # type: ignore[method-assign]
    restore = _quiet_signals()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        restore()
    return 0


def _quiet_signals() -> Callable[[], None]:
    """uvicorn ends on SIGINT/SIGTERM, then raises the signal again for the handler it found:
    a handler that does nothing makes that a clean exit 0 (the contract), not a death by the
    signal or a KeyboardInterrupt. Returns the undo."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {signum: signal.signal(signum, lambda *_: None)
                for signum in (signal.SIGINT, signal.SIGTERM)}

    def undo() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return undo
