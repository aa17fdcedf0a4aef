"""The two failures that are not limits but are not plain failures either (SPEC A26, A32, A37).

Network errors (A26), in each CLI's own wording: claude is Node (`getaddrinfo ENOTFOUND`,
`ECONNREFUSED`, `API Error: Connection error.`, `Unable to connect to API (ConnectionRefused)`,
`fetch failed`, `Request timed out`); codex is Rust (`failed to lookup address information`,
`error sending request for url`, `Reconnecting... waiting for network`, `tcp connect error`,
`connection reset by peer`); agy is Go (`dial tcp: lookup … no such host`, `connect: connection
refused`, `i/o timeout`, `TLS handshake timeout`). Capacity and server errors (503, overloaded,
`stream disconnected before completion: An error occurred while processing your request`) are
not network errors: the provider answered (A40).

Not logged in (A32): claude's result `Not logged in · Please run /login`, and its other auth
errors that end the same way (`Invalid API key · Please run /login`, `OAuth token revoked ·
Please run /login`, a 401 `authentication_error` for an expired OAuth token): retrying cannot
help. codex and agy have no login check: their errors are plain failures.
"""

from __future__ import annotations

import re

from ._bounded import Meter, keyword_hits, match, search, window

_NETWORK = (
    "enotfound", "eai_again", "getaddrinfo", "failed to lookup address", "could not resolve host",
    "no such host", "name or service not known", "nodename nor servname", "name resolution",
    "dns error", "econnrefused", "connection refused", "connectionrefused", "econnreset",
    "connection reset", "connectionreset", "socket hang up", "etimedout", "esockettimedout",
    "connect timeout", "connection timed out", "connect timed out", "connectiontimeout",
    "i/o timeout", "operation timed out", "request timed out", "und_err_connect_timeout",
    "und_err_socket", "enetunreach", "ehostunreach", "enetdown", "network is unreachable",
    "no route to host", "error sending request", "waiting for network", "unable to connect to api",
    "connection error", "fetch failed", "tls handshake timeout", "dial tcp", "tcp connect error",
    "error trying to connect", "network is down", "internet connection appears to be offline",
    "client.timeout exceeded", "waiting for connection", "failed to look up",
)
# Model text (A5) counts only when it reads as the CLI's error line, not prose about one.
_ERROR_LINE = re.compile(
    r"\s*(?:■\s*|⎿\s*|\[[^\]\n]{0,40}\]\s*)?"
    r"(?:API\s+Error|Error|ERROR|error|Unable\s+to\s+connect|Reconnecting|stream\s+disconnected"
    r"|Connection\s+error|TypeError|FetchError|fetch\s+failed|request\s+to\s+https?://"
    r"|failed\s+to\s+(?:lookup|connect)|dial\s+tcp|getaddrinfo|Request\s+timed\s+out)",
)

_LOGIN = ("not logged in", "please run /login", "authentication_error", "oauth token")
# claude ends its auth errors with "· Please run /login" (expired or revoked OAuth token,
# invalid API key); a 401 `authentication_error` says the same without the hint.
_LOGIN_CONFIRM = re.compile(
    r"Not\s+logged\s+in|[·∙•|-]\s*Please\s+run\s+/login|\"authentication_error\""
    r"|OAuth\s+token\s+(?:has\s+(?:expired|been\s+revoked)|revoked|expired)",
    re.IGNORECASE,
)

# How much of a network error line `.text` keeps.
_TEXT_CHARS = 200


def _line(text: str, start: int) -> str:
    lo = max(text.rfind("\n", 0, start) + 1, start - 80)
    hi = text.find("\n", start)
    if hi == -1:
        hi = len(text)
    return " ".join(text[lo:hi].split())[:_TEXT_CHARS]


def scan_network(text: str, *, model_text: bool, meter: Meter | None = None) -> str | None:
    """The network error line in `text`, if any (A26, A37)."""
    if model_text and match(_ERROR_LINE, text, meter) is None:
        return None
    for position, _ in keyword_hits(_NETWORK, text, meter):
        return _line(text, position)
    return None


def scan_login(text: str, meter: Meter | None = None) -> str | None:
    """claude's not-logged-in result (A32), if `text` says it."""
    for position, _ in keyword_hits(_LOGIN, text, meter):
        win, _ = window(text, position, before=60, after=120)
        if search(_LOGIN_CONFIRM, win, meter):
            return _line(text, position)
    return None
