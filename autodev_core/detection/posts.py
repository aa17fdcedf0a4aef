"""What a call posted: the text a provider CLI's output carries as its answer (SPEC C1, A31).

Pure and total: any text in, a post or None out; it never raises.

- claude (`-p … --output-format stream-json --verbose`): JSON lines; the post is the `result` of
  the last `{"type": "result", "subtype": "success", "is_error": false}` event. A result with
  `is_error: true` (`Not logged in · Please run /login`, a limit notice, `API Error: …`) is the
  CLI's error, not a post. Output with no JSON event at all (a template that asks for
  `--output-format text`) is read as plain text.
- codex `exec`: plain stdout is the final message (everything else goes to stderr). With
  `exec --json` the stdout is JSONL events and the post is the text of the last `item.completed`
  whose item is an agent message (older releases: `assistant_message`, or `{"msg": {"type":
  "agent_message", "message": …}}`).
- agy `-p`: plain stdout.

A notice is never a post: an answer whose text `classify_output` reads as a usage limit, a
network error or claude's login error (A2-A6, A26, A32) — claude's plain-text limit notice on
stdout, a short agent message that is a notice — is None here, whatever the CLI's exit code.
Model text over 300 characters that quotes a notice is a post (A5), and so is an answer followed
by a separate notice in the same output (A17: the post stays; the call is a limit after a
post). Whether the call ended well enough for its text to count (a clean exit, no
timeout: only a clean exit posts) is the caller's business; `classify_output`'s verdict plus the
exit code is all an adapter needs (docs/orchestrators.md, "Writing your adapter").
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ..engine import PROVIDERS
from .cli_events import ITEM_DONE_EVENT, MESSAGE_ITEM_TYPES, RESULT_EVENT
from .reader import classify_output

#: Any instant serves to tell a notice from a post: only a limit's reset depends on it.
_ANY_TIME = datetime(2026, 1, 1, tzinfo=UTC)


def _events(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects among stdout's lines that name an event `type` (or codex's old `msg`)."""
    events: list[dict[str, Any]] = []
    for line in stdout.split("\n"):  # not splitlines(): JSON text may hold a raw U+2028
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and ("type" in value or "msg" in value):
            events.append(value)
    return events


def _plain(stdout: str) -> str | None:
    text = stdout.strip()
    return text or None


def _claude(stdout: str) -> str | None:
    events = _events(stdout)
    if not events:
        return _plain(stdout)
    for event in reversed(events):
        if event.get("type") != RESULT_EVENT:
            continue
        # The last result decides: an error result after an earlier success is not a post.
        result = event.get("result")
        ok = event.get("subtype") == "success" and event.get("is_error") is not True
        if ok and isinstance(result, str) and result.strip():
            return result.strip()
        return None
    return None


def _codex_message(event: dict[str, Any]) -> str | None:
    if event.get("type") == ITEM_DONE_EVENT:
        item = event.get("item")
        if not isinstance(item, dict):
            return None
        kind = item.get("type", item.get("item_type"))
        text = item.get("text")
        if kind in MESSAGE_ITEM_TYPES and isinstance(text, str):
            return text
        return None
    msg = event.get("msg")
    if isinstance(msg, dict) and msg.get("type") == "agent_message":
        text = msg.get("message")
        return text if isinstance(text, str) else None
    return None


def _codex(stdout: str) -> str | None:
    events = _events(stdout)
    if not events:
        return _plain(stdout)
    for event in reversed(events):
        text = _codex_message(event)
        if text is not None and text.strip():
            return text.strip()
    return None


def _is_notice(provider: str, text: str) -> bool:
    """Whether `classify_output` reads the answer `text` alone as a notice (limit, network,
    login)."""
    seen = classify_output(provider, stdout=text, stderr="", exit_code=None, now=_ANY_TIME,
                           local_tz=UTC)
    return seen.kind != "other"


def extract_post(provider: str, stdout: str) -> str | None:
    """The text the call posted, or None when its output carries no post. Never raises."""
    try:
        if not isinstance(stdout, str) or provider not in PROVIDERS:
            return None
        if provider == "claude":
            post = _claude(stdout)
        elif provider == "codex":
            post = _codex(stdout)
        else:
            post = _plain(stdout)
        if post is not None and _is_notice(provider, post):
            return None  # a notice is never a post, whatever the exit code
        return post
    except Exception:  # total by contract: odd output is "no post", never a crash
        return None
