"""The CLIs' own structured events, named once (SPEC A2, A4, A5, A17, A37).

The reader (`_streams`), the post extractor (`posts`) and the shell's bounded capture (which
keeps these events whole when a chatty call's tail has moved past them) all take the event
types from here, so a type the reader decides by can never be one the capture lets go.
"""

from __future__ import annotations

from typing import Final

#: claude's usage event: a limit when its status is rejected/blocked, a reading when allowed (A2).
LIMIT_EVENT: Final = "rate_limit_event"
#: claude's final event: the post (A17) and, on an error result, the CLI's own error text.
RESULT_EVENT: Final = "result"
#: codex `exec --json` events that carry the CLI's own error words (A4, A26, A37).
ERROR_EVENTS: Final = ("error", "turn.failed", "stream_error")
#: codex's event for a finished turn (a terminal success).
TURN_DONE_EVENT: Final = "turn.completed"
#: codex's event for a finished item: an agent message (the post) or an error item.
ITEM_DONE_EVENT: Final = "item.completed"
#: codex item types (current and older releases) that carry the model's answer.
MESSAGE_ITEM_TYPES: Final = ("agent_message", "assistant_message")
#: Top-level event types a bounded capture keeps whole: everything the reader or the post
#: extractor decides by.
KEPT_EVENT_TYPES: Final = (RESULT_EVENT, LIMIT_EVENT, ITEM_DONE_EVENT, *ERROR_EVENTS,
                           TURN_DONE_EVENT)
#: The keys a CLI's structured event line opens with (`{"type": …`, codex's older `{"msg": …`,
#: JSON-RPC's `{"method": …`, a bare API error's `{"error": …`): such stdout is a stream of
#: events, not plain text.
EVENT_OPENING_KEYS: Final = ("type", "msg", "method", "error")
