"""The loopback HTTP server both API stand-ins stand on: a `ThreadingHTTPServer` on
127.0.0.1 at a free port, in a daemon thread, recording every request it is sent.

A subclass answers with `respond(request) -> Answer`; any method is accepted (a CLI may GET,
HEAD or OPTIONS other things) and what the subclass does not know is a quick 404.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import attrs

#: The address the stand-ins listen on: loopback only, never another host.
LOOPBACK = "127.0.0.1"


@attrs.frozen
class Request:
    """One request a stand-in was sent: method, path (without the query), query, headers
    (names lower-cased, in order), body, and when it arrived (`time.time()`)."""

    method: str
    path: str
    query: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    at: float

    def header(self, name: str) -> str | None:
        """The first value of header `name` (any case), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def summary(self) -> dict[str, Any]:
        """The request as plain JSON-able data (for transcripts)."""
        return {"method": self.method, "path": self.path, "query": self.query,
                "headers": dict(self.headers), "body_bytes": len(self.body)}


@attrs.frozen
class Answer:
    """What a stand-in sends back: status, headers and body."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


NOT_FOUND = Answer(404, (("content-type", "application/json"),),
                   b'{"type":"error","error":{"type":"not_found_error","message":"Not found"}}')


def json_answer(status: int, value: Any, headers: Mapping[str, str] | None = None) -> Answer:
    """An answer whose body is `value` as JSON."""
    extra = tuple((headers or {}).items())
    return Answer(status, (("content-type", "application/json"), *extra),
                  json.dumps(value).encode())


def sse(events: list[tuple[str, Any]]) -> bytes:
    """A server-sent events body: one `event:`/`data:` block per (name, JSON value)."""
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
        for name, data in events
    )


class StandIn:
    """A loopback API stand-in: a context manager serving until it exits."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length > 0 else b""
                parts = urlsplit(self.path)
                request = Request(
                    method=self.command, path=parts.path, query=parts.query,
                    headers=tuple((k.lower(), v) for k, v in self.headers.items()),
                    body=body, at=time.time(),
                )
                with owner._lock:
                    owner.requests.append(request)
                try:
                    answer = owner.respond(request)
                except Exception as exc:  # a bug in a stand-in: say so, as a 500
                    answer = json_answer(500, {"error": {"type": "standin_bug",
                                                         "message": repr(exc)}})
                self.send_response(answer.status)
                for key, value in answer.headers:
                    self.send_header(key, value)
                self.send_header("content-length", str(len(answer.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(answer.body)
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

            def log_message(self, *_args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name=f"{type(self).__name__}:{self.port}")

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def respond(self, request: Request) -> Answer:
        """The answer to `request` (subclasses); unknown paths are a 404."""
        return NOT_FOUND

    def seen(self) -> list[Request]:
        """Every request so far, in order of arrival."""
        with self._lock:
            return list(self.requests)

    def start(self) -> Self:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
