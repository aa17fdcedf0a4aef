"""A stand-in of the Anthropic Messages API on 127.0.0.1 (SPEC A2-A6, A26, A27).

`POST /v1/messages` (claude adds `?beta=true`; any query is accepted) is answered by the
`Reply` the stand-in was given: a normal answer (an SSE stream when the request asks
`"stream": true`, else one JSON message) or an error body `{"type": "error", "error": {...}}`,
with its HTTP status and headers. `Unified` builds the subscription's
`anthropic-ratelimit-unified-*` headers (A2: a rejected status is a usage limit; A3: its reset).
`POST /v1/messages/count_tokens` answers a token count; every other path is a quick 404.
Every request is recorded (`seen()`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import attrs

from ._http import NOT_FOUND, Answer, Request, StandIn, json_answer, sse

#: The model named in answers when the request names none.
DEFAULT_MODEL = "claude-sonnet-4-5"


@attrs.frozen
class Window:
    """One unified window's headers (`-5h-*`, `-7d-*`): status, reset (epoch seconds),
    utilization (0..1) and the warning threshold it surpassed."""

    status: str = "allowed"
    reset: int | None = None
    utilization: float | None = None
    surpassed_threshold: float | None = None


@attrs.frozen
class Unified:
    """The `anthropic-ratelimit-unified-*` headers of a subscription answer (A2, A3).

    `status`: allowed / allowed_warning / rejected; `reset`: epoch seconds (`-reset`); `claim`:
    the representative claim (five_hour, seven_day, ...); `windows`: (name, Window) with name
    the header's window tag ("5h", "7d")."""

    status: str = "allowed"
    reset: int | None = None
    claim: str | None = None
    windows: tuple[tuple[str, Window], ...] = ()
    #: As the real API says when overage is off for the account.
    overage_status: str | None = "rejected"
    overage_disabled_reason: str | None = "org_level_disabled"

    def headers(self) -> tuple[tuple[str, str], ...]:
        prefix = "anthropic-ratelimit-unified-"
        out: list[tuple[str, str]] = [(prefix + "status", self.status)]
        if self.reset is not None:
            out.append((prefix + "reset", str(self.reset)))
        if self.claim is not None:
            out.append((prefix + "representative-claim", self.claim))
        for tag, window in self.windows:
            out.append((f"{prefix}{tag}-status", window.status))
            if window.reset is not None:
                out.append((f"{prefix}{tag}-reset", str(window.reset)))
            if window.utilization is not None:
                out.append((f"{prefix}{tag}-utilization", f"{window.utilization:g}"))
            if window.surpassed_threshold is not None:
                out.append((f"{prefix}{tag}-surpassed-threshold",
                            f"{window.surpassed_threshold:g}"))
        if self.overage_status is not None:
            out.append((prefix + "overage-status", self.overage_status))
        if self.overage_disabled_reason is not None:
            out.append((prefix + "overage-disabled-reason", self.overage_disabled_reason))
        return tuple(out)


@attrs.frozen
class Reply:
    """How the stand-in answers `POST /v1/messages`.

    `status` 200 with no `error_type` is a normal answer saying `text`; otherwise the body is
    the API's error JSON (`error_type`, `error_message`). `unified` adds the subscription's
    rate-limit headers, `headers` any others (e.g. `retry-after`). `true_reset` is when the
    server's limit really lifts (UTC), for the checks (A3, A6); None when there is no limit or
    no known end."""

    status: int = 200
    text: str = "Hello! How can I help you today?"
    error_type: str | None = None
    error_message: str = ""
    unified: Unified | None = None
    headers: tuple[tuple[str, str], ...] = ()
    true_reset: datetime | None = None

    @property
    def is_error(self) -> bool:
        return self.error_type is not None or self.status >= 400

    def all_headers(self) -> tuple[tuple[str, str], ...]:
        request_id = "req_" + uuid.uuid4().hex[:24]
        unified = self.unified.headers() if self.unified is not None else ()
        return (("request-id", request_id), *unified, *self.headers)


def _usage(output_tokens: int) -> dict[str, int]:
    return {"input_tokens": 12, "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def message_events(text: str, model: str) -> list[tuple[str, Any]]:
    """The SSE events of a normal one-text-block answer ending with `end_turn`."""
    message_id = "msg_" + uuid.uuid4().hex[:24]
    start: dict[str, Any] = {
        "id": message_id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": _usage(1)}
    words = len(text.split())
    return [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": words}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def message_json(text: str, model: str) -> dict[str, Any]:
    """A normal answer as one JSON message (a request without `"stream": true`)."""
    return {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
            "model": model, "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": _usage(len(text.split()))}


class AnthropicApi(StandIn):
    """The Messages API stand-in; `reply` may be changed between requests."""

    def __init__(self, reply: Reply) -> None:
        super().__init__()
        self.reply = reply

    def messages(self) -> list[Request]:
        """The `POST /v1/messages` requests seen."""
        return [r for r in self.seen() if r.method == "POST" and r.path == "/v1/messages"]

    def respond(self, request: Request) -> Answer:
        if request.method == "POST" and request.path == "/v1/messages/count_tokens":
            return json_answer(200, {"input_tokens": max(1, len(request.body) // 4)})
        if request.method != "POST" or request.path != "/v1/messages":
            return NOT_FOUND
        reply = self.reply
        headers = dict(reply.all_headers())
        if reply.is_error:
            body = {"type": "error",
                    "error": {"type": reply.error_type or "api_error",
                              "message": reply.error_message},
                    "request_id": headers["request-id"]}
            return json_answer(reply.status, body, headers)
        asked = request.json()
        model = asked.get("model") if isinstance(asked, dict) else None
        model = model if isinstance(model, str) and model else DEFAULT_MODEL
        if isinstance(asked, dict) and asked.get("stream") is True:
            return Answer(reply.status,
                          (("content-type", "text/event-stream"),
                           ("cache-control", "no-cache"), *headers.items()),
                          sse(message_events(reply.text, model)))
        return json_answer(reply.status, message_json(reply.text, model), headers)
