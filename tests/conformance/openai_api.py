"""A stand-in of the OpenAI Responses API on 127.0.0.1 (SPEC A2-A6, A26, A27).

`POST /v1/responses` is answered by the `Reply` the stand-in was given: a normal answer as an
SSE stream (`response.created`, `response.output_item.added`, `response.output_text.delta`,
`response.output_item.done`, `response.completed` with usage), or an error status with a JSON
body `{"error": {...}}` (a ChatGPT plan's `usage_limit_reached` with its `plan_type` and
optional `resets_at`, `insufficient_quota`, `rate_limit_exceeded`, a server error). Every other
path is a quick 404. Every request is recorded (`seen()`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import attrs

from ._http import Answer, Request, StandIn, json_answer, sse

DEFAULT_MODEL = "gpt-5"
NOT_FOUND = json_answer(404, {"error": {"type": "invalid_request_error", "code": "not_found",
                                        "message": "Not found", "param": None}})


@attrs.frozen
class Reply:
    """How the stand-in answers `POST /v1/responses`.

    `status` 200 with no `error` is a normal streamed answer saying `text`; otherwise the body
    is `{"error": error}` with that status. `headers` are added (e.g. `retry-after`).
    `true_reset` is when the server's limit really lifts (UTC), for the checks (A3, A6)."""

    status: int = 200
    text: str = "Hello! How can I help you today?"
    error: dict[str, Any] | None = attrs.field(default=None, eq=False)
    headers: tuple[tuple[str, str], ...] = ()
    true_reset: datetime | None = None

    @property
    def is_error(self) -> bool:
        return self.error is not None or self.status >= 400


def usage_limit(plan_type: str, resets_at: int | None) -> dict[str, Any]:
    """The error of a ChatGPT plan's usage limit (A2), `resets_at` in epoch seconds (A3)."""
    error: dict[str, Any] = {"type": "usage_limit_reached",
                             "message": "The usage limit has been reached",
                             "plan_type": plan_type}
    if resets_at is not None:
        error["resets_at"] = resets_at
    return error


def response_events(text: str, model: str) -> list[tuple[str, Any]]:
    """The SSE events of a normal answer: one assistant message holding `text`."""
    response_id = "resp_" + uuid.uuid4().hex
    item_id = "msg_" + uuid.uuid4().hex
    created = {"id": response_id, "object": "response", "status": "in_progress",
               "model": model, "output": []}
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {"id": item_id, "type": "message", "role": "assistant", "status": "completed",
            "content": [part]}
    usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": len(text.split()),
             "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 12 + len(text.split())}
    completed = {**created, "status": "completed", "output": [item], "usage": usage}
    return [
        ("response.created", {"type": "response.created", "response": created}),
        ("response.output_item.added", {
            "type": "response.output_item.added", "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []}}),
        ("response.output_text.delta", {
            "type": "response.output_text.delta", "item_id": item_id, "output_index": 0,
            "content_index": 0, "delta": text}),
        ("response.output_item.done", {
            "type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": completed}),
    ]


class OpenAiApi(StandIn):
    """The Responses API stand-in; `reply` may be changed between requests."""

    def __init__(self, reply: Reply) -> None:
        super().__init__()
        self.reply = reply

    def responses(self) -> list[Request]:
        """The `POST /v1/responses` requests seen."""
        return [r for r in self.seen() if r.method == "POST" and r.path == "/v1/responses"]

    def respond(self, request: Request) -> Answer:
        if request.method != "POST" or request.path != "/v1/responses":
            return NOT_FOUND
        reply = self.reply
        request_id = "req_" + uuid.uuid4().hex
        headers = {"x-request-id": request_id, **dict(reply.headers)}
        if reply.is_error:
            error = reply.error or {"type": "server_error", "message": "The server had an error"}
            return json_answer(reply.status, {"error": error}, headers)
        asked = request.json()
        model = asked.get("model") if isinstance(asked, dict) else None
        model = model if isinstance(model, str) and model else DEFAULT_MODEL
        return Answer(reply.status,
                      (("content-type", "text/event-stream"), *headers.items()),
                      sse(response_events(reply.text, model)))
