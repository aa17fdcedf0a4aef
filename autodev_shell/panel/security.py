"""The panel's guard (docs/panel.md "Security model"), one ASGI layer in front of
every route, the event stream and the static files included:

1. `Host` must be one of the loopback names at the panel's port (or the explicit `--host`):
   anything else is 403, against DNS rebinding.
2. `GET /?token=T` with a right token sets the session cookie (HttpOnly, SameSite=Strict, on
   the host it was asked on: the printed URL's `p-<label>.localhost`, a host of its own) and
   303-redirects to `/`, so the token leaves the address bar; every other request needs the
   cookie (401 without it). Two credentials: the secret (read-write) and the read-only token
   derived from it (`derive(secret, "read-only")`), which opens a read-only session: it cannot
   steer the run. Tokens are compared with `hmac.compare_digest`.
3. Every request that is not GET or HEAD needs `X-Autodev-CSRF` equal to the session's CSRF
   value (`derive(cookie, "csrf")`, never the secret itself), an `Origin` equal to the request's
   own origin, and `Sec-Fetch-Site: same-origin` when the browser sends it; else 403. A
   read-only session gets 403; with `--read-only` any such method is 405: no route writes.
4. Every response carries the CSP (no inline script or style), nosniff, no referrer, no-store,
   no framing; there is no CORS header anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs

COOKIE: Final = "autodev_panel"
CSRF_HEADER: Final = "x-autodev-csrf"
TOKEN_FILE: Final = "panel.token"
SECURITY_HEADERS: Final = (
    ("content-security-policy",
     "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; "
     "object-src 'none'"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    return secrets.token_urlsafe(32)


def derive(secret: str, purpose: str) -> str:
    """A value for `purpose` made from `secret` (HMAC-SHA256, URL-safe): it says nothing of the
    secret, and only the holder of the secret makes it."""
    digest = hmac.new(secret.encode("utf-8", "surrogateescape"), purpose.encode(),
                      hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def read_only_token(secret: str) -> str:
    """The read-only credential of a panel whose secret is `secret` (docs/panel.md)."""
    return derive(secret, "read-only")


def csrf_of(session: str) -> str:
    """The CSRF value of a session (its cookie's value): what the page sends in
    `X-Autodev-CSRF`; the page is never given the secret."""
    return derive(session, "csrf")


def host_label(secret: str) -> str:
    """`p-<16 hex>`: the panel's own host name under `.localhost` (Chromium and Firefox resolve
    every `*.localhost` to loopback), so its cookie is sent to no other local server; the same
    for a panel started again with the same token, so open pages keep their session."""
    return "p-" + derive(secret, "host").encode().hex()[:16].lower()


def same(given: str, token: str) -> bool:
    """Constant-time comparison of a presented token with the session's."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"),
                               token.encode("utf-8", "surrogateescape"))


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(host: str, port: int, label: str | None = None) -> frozenset[str]:
    """`Host` header values the panel answers: the loopback names at its port, its own
    `<label>.localhost`, and the bound address itself (an explicit `--host`)."""
    names = {"127.0.0.1", "localhost", "[::1]", _bracket(host)}
    if label:
        names.add(f"{label}.localhost")
    return frozenset(f"{name}:{port}".lower() for name in names)


_TOKEN_SHAPE: Final = re.compile(r"[A-Za-z0-9_\-]{32,128}")


def kept_token(run_dir: Path) -> str | None:
    """The token of `<run>/panel.token` when it can be trusted: a regular file (not a link),
    owned by this user, mode 0600, holding one token. A panel started again on the same run
    keeps it, so the pages it served keep their session (their event streams reconnect).
    Deleting the file revokes every session at the next start."""
    path = run_dir / TOKEN_FILE
    try:
        info = os.lstat(path)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid()
                or stat.S_IMODE(info.st_mode) != 0o600):
            return None
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if _TOKEN_SHAPE.fullmatch(text) else None


def write_token_file(run_dir: Path, token: str) -> Path:
    """`<run>/panel.token`, mode 0600 whatever the umask, replaced whole."""
    path = run_dir / TOKEN_FILE
    temp = run_dir / f".{TOKEN_FILE}.{os.getpid()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, f"{token}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    return path


def _headers(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        name = key.decode("latin-1").lower()
        if name in found and name in ("host", "origin", CSRF_HEADER):
            found[name] = "\0duplicate"  # two Host or Origin headers: neither is trusted
        else:
            found[name] = value.decode("latin-1")
    return found


def _cookie(header: str) -> str:
    """The session cookie's value. Read by hand: cookies are not kept apart by port, so other
    local apps' cookies come along, and `http.cookies` stops at the first it finds odd."""
    for part in header.split(";"):
        name, eq, value = part.strip().partition("=")
        if eq and name == COOKIE:
            return value.strip().strip('"')
    return ""


class Guard:
    """The ASGI layer described above."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: frozenset[str],
                 read_only: bool) -> None:
        self.app = app
        self.token = token
        self.read_only_token = read_only_token(token)
        self.hosts = hosts
        self.read_only = read_only

    def session_of(self, given: str) -> str | None:
        """The session a presented credential opens (the cookie's value), or None: the secret
        opens a read-write one (read-only on a `--read-only` panel), the read-only token a
        read-only one."""
        if same(given, self.token):
            return self.read_only_token if self.read_only else self.token
        if same(given, self.read_only_token):
            return self.read_only_token
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ())
                           if not k.lower().startswith(b"access-control-")]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS]
                message["headers"] = headers
            await send(message)

        headers = _headers(scope)
        method = scope["method"]
        if headers.get("host", "").lower() not in self.hosts:
            await _refuse(guarded, 403, "This host name is not the panel's (DNS rebinding "
                          "guard): open the URL `autodev panel` printed.")
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if scope["path"] == "/" and "token" in query and method in ("GET", "HEAD"):
            session = self.session_of(query["token"][0])
            if session is None:
                await _refuse(guarded, 401, "Wrong token: open the URL `autodev panel` printed.")
                return
            await guarded({"type": "http.response.start", "status": 303, "headers": [
                (b"location", b"/"),
                (b"set-cookie", f"{COOKIE}={session}; HttpOnly; SameSite=Strict; "
                 "Path=/".encode()),
                (b"content-type", b"text/plain; charset=utf-8"),
            ]})
            await send({"type": "http.response.body", "body": b"Signed in.\n"})
            return
        cookie = _cookie(headers.get("cookie", ""))
        session = self.session_of(cookie) if cookie else None
        if session is None:
            await _refuse(guarded, 401, "No panel session: open the URL `autodev panel` "
                          "printed (it carries the token).")
            return
        watch_only = self.read_only or same(cookie, self.read_only_token)
        state = scope.setdefault("state", {})
        state["autodev_read_only"] = watch_only
        state["autodev_csrf"] = "" if watch_only else csrf_of(cookie)
        if method not in ("GET", "HEAD"):
            if self.read_only:
                await _refuse(guarded, 405, "This panel is read-only (--read-only).",
                              allow="GET, HEAD")
                return
            if watch_only:
                await _refuse(guarded, 403, "This session is read-only (opened with the "
                              "read-only URL): it cannot steer the run.")
                return
            origin = headers.get("origin", "")
            site = headers.get("sec-fetch-site")
            if not same(headers.get(CSRF_HEADER, ""), csrf_of(cookie)):
                await _refuse(guarded, 403, "Missing or wrong X-Autodev-CSRF header.")
                return
            if origin.lower() != f"http://{headers.get('host', '')}".lower():
                await _refuse(guarded, 403, "Cross-origin request refused (Origin).")
                return
            if site is not None and site != "same-origin":
                await _refuse(guarded, 403, "Cross-site request refused (Sec-Fetch-Site).")
                return
        await self.app(scope, receive, guarded)


async def _refuse(send: Send, status: int, line: str, *, allow: str = "") -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if allow:
        headers.append((b"allow", allow.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": f"{line}\n".encode()})
