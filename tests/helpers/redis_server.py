"""A real `redis-server` for tests: its own process on a free loopback port, in a temp dir.

Nothing else on the machine is touched: no config file, no persistence, no service. Tests that
need it skip with a clear reason only when the binary is absent (CI installs it, .ci/run).

docs/sharing.md: `tls=` serves TLS only (`--port 0 --tls-port`), with a throwaway CA and a server
certificate for 127.0.0.1 and localhost made by `openssl` in a temp dir (`make_certificates`);
`user=` with `password=` makes an ACL user (`--user NAME on >PASSWORD ~* &* +@all`) and turns
the default user off, so only that user gets in. Tests that need TLS skip with one clear line
when `openssl` is absent, or when this redis-server was built without TLS.

`binary=` picks the server program, `redis-server` (the default) or `valkey-server` (Valkey 8 from
Debian bookworm-backports, which takes the same options): `SERVERS` maps each name to its path,
`server_params()` is a fixture's `params=` for both (each skipped, as `needs_redis` skips, when its
binary is absent), and `cli_for` names the matching `redis-cli` / `valkey-cli`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import ssl
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
VALKEY = shutil.which("valkey-server")
VALKEY_REASON = (
    "valkey-server is missing: apt-get install -t bookworm-backports valkey-server (Debian 12),"
    " brew install valkey (macOS); .ci/run installs it"
)
needs_valkey = pytest.mark.skipif(VALKEY is None, reason=VALKEY_REASON)
#: The server programs the sharing tests run on, by name: their paths (None when absent).
SERVERS: dict[str, str | None] = {"redis-server": BINARY, "valkey-server": VALKEY}
_MISSING = {"redis-server": (needs_redis, REASON), "valkey-server": (needs_valkey, VALKEY_REASON)}
OPENSSL = shutil.which("openssl")
OPENSSL_REASON = (
    "openssl is missing (it makes the TLS tests' throwaway CA): apt-get install openssl"
    " (Debian/Ubuntu); .ci/run installs it"
)
needs_openssl = pytest.mark.skipif(OPENSSL is None, reason=OPENSSL_REASON)
TLS_REASON = (
    "this redis-server was built without TLS (--tls-port): Debian's redis-server serves TLS;"
    " .ci/run installs it"
)
#: What a redis-server without TLS says when asked for a TLS port (6.x: an unknown directive;
#: 7.x built without it, or with TLS as a module not loaded: no TLS connection type).
_NO_TLS = re.compile(r"(?i)bad directive|tls.*(not supported|not compiled|module)|"
                     r"connection (type|listener).*tls|unknown.*tls")


class Certificates:
    """A throwaway CA and a server certificate it signed, for 127.0.0.1 and localhost (PEM)."""

    def __init__(self, directory: Path, *, name: str = "autodev test CA") -> None:
        if OPENSSL is None:  # pragma: no cover - guarded by needs_openssl
            pytest.skip(OPENSSL_REASON)
        directory.mkdir(parents=True, exist_ok=True)
        self.ca = directory / "ca.pem"
        self.ca_key = directory / "ca.key"
        self.cert = directory / "server.pem"
        self.key = directory / "server.key"
        request = directory / "server.csr"
        extensions = directory / "server.ext"
        extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n", encoding="utf-8")
        for argv in (
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.ca_key,
             "-out", self.ca, "-days", "2", "-subj", f"/CN={name}"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key, "-out", request,
             "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", request, "-CA", self.ca, "-CAkey", self.ca_key,
             "-CAcreateserial", "-out", self.cert, "-days", "2", "-extfile", extensions],
        ):
            subprocess.run([OPENSSL, *map(str, argv)], check=True, capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=120)


def server_params() -> list[object]:
    """`params=` of a fixture run once on each server program, each skipped when it is absent."""
    return [pytest.param(name, marks=_MISSING[name][0], id=name) for name in SERVERS]


def server_binary(name: str) -> str:
    """The path of server program `name` (`redis-server`, `valkey-server`), else a skip."""
    path = SERVERS[name]
    if path is None:  # pragma: no cover - guarded by server_params' marks
        pytest.skip(_MISSING[name][1])
    return path


def cli_for(binary: str) -> str | None:
    """The command-line client beside a server program (`valkey-cli` for `valkey-server`)."""
    return shutil.which(Path(binary).name.replace("-server", "-cli"))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process; `stop`/`kill`/`pause`/`resume`/`start` for fault tests."""

    def __init__(self, directory: Path, *, password: str | None = None,
                 user: str | None = None, tls: Certificates | None = None,
                 binary: str = "redis-server", args: tuple[str, ...] = ()) -> None:
        self.binary = server_binary(binary)
        assert user is None or password, "an ACL user needs a password"
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.password = password
        self.user = user
        self.tls = tls
        self.port = free_port()
        self.args = args  # more options for the server (e.g. `--replicaof`)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """`redis://` (or `rediss://` when serving TLS; no CA in it), with the credentials."""
        if self.user:
            auth = f"{self.user}:{self.password}@"
        else:
            auth = f":{self.password}@" if self.password else ""
        scheme = "rediss" if self.tls else "redis"
        return f"{scheme}://{auth}127.0.0.1:{self.port}/0"

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        log = self.directory / "redis.log"
        argv = [
            self.binary, "--bind", "127.0.0.1", "--dir", str(self.directory),
            "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
            "--logfile", str(log),
        ]
        if self.tls is not None:
            argv += ["--port", "0", "--tls-port", str(self.port),
                     "--tls-cert-file", str(self.tls.cert), "--tls-key-file", str(self.tls.key),
                     "--tls-ca-cert-file", str(self.tls.ca), "--tls-auth-clients", "no"]
        else:
            argv += ["--port", str(self.port)]
        if self.user:
            argv += ["--user", "default", "off",
                     "--user", self.user, "on", f">{self.password}", "~*", "&*", "+@all"]
        elif self.password:
            argv += ["--requirepass", self.password]
        argv += list(self.args)
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE if self.tls else None)
        if self.user:
            auth = f"AUTH {self.user} {self.password}\r\n"
        else:
            auth = f"AUTH {self.password}\r\n" if self.password else ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                said = log.read_text(errors="replace") if log.exists() else ""
                said += (self.process.stderr.read() or b"").decode(errors="replace") \
                    if self.process.stderr else ""
                if self.tls is not None and _NO_TLS.search(said):
                    pytest.skip(TLS_REASON)
                raise RuntimeError(f"{Path(self.binary).name} exited with "
                                   f"{self.process.returncode}: {said[-500:]}")
            try:
                with self._connect() as sock:
                    sock.sendall(f"{auth}PING\r\n".encode())
                    if b"PONG" in _read_some(sock):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer PING within 30 s")

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=0.5)
        if self.tls is None:
            return sock
        context = ssl.create_default_context(cafile=str(self.tls.ca))
        try:
            return context.wrap_socket(sock, server_hostname="127.0.0.1")
        except BaseException:
            sock.close()
            raise

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
