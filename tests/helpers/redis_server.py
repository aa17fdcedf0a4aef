"""A real `redis-server` for tests: its own process on a free loopback port, in a temp dir.

Nothing else on the machine is touched: no config file, no persistence, no service. Tests that
need it skip with a clear reason only when the binary is absent (CI installs it, .ci/run).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

BINARY = shutil.which("redis-server")
REASON = (
    "redis-server is missing: apt-get install redis-server (Debian/Ubuntu), brew install redis"
    " (macOS); .ci/run installs it"
)
needs_redis = pytest.mark.skipif(BINARY is None, reason=REASON)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process; `stop`/`kill`/`pause`/`resume`/`start` for fault tests."""

    def __init__(self, directory: Path, *, password: str | None = None) -> None:
        if BINARY is None:  # pragma: no cover - guarded by needs_redis
            pytest.skip(REASON)
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.password = password
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert BINARY is not None
        argv = [
            BINARY, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
            "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
            "--logfile", str(self.directory / "redis.log"),
        ]
        if self.password:
            argv += ["--requirepass", self.password]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(
                        (f"AUTH {self.password}\r\nPING\r\n" if self.password else "PING\r\n")
                        .encode()
                    )
                    if b"PONG" in _read_some(sock):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer PING within 30 s")

    def pause(self) -> None:
        """SIGSTOP: the port still accepts connections, but nothing answers."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: gone at once, with everything it held (no persistence)."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


def _read_some(sock: socket.socket) -> bytes:
    data = b""
    try:
        while b"PONG" not in data and len(data) < 4096:
            chunk = sock.recv(1024)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data
