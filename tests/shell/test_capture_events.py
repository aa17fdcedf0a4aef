"""The CLIs' own event types are named once, in the core (docs/design.md; SPEC A2, A4, A5).

The reader decides by claude's `rate_limit_event` and `result`, codex's `error`, `turn.failed`,
`stream_error`, `turn.completed` and agent messages; a chatty call's stdout tail (256 KiB) may move
past such an event before the call ends, so the bounded capture keeps it whole. Both sides take
the list from `autodev_core.detection.cli_events`: an event the reader reads but the capture let go
would make a limit or a network outage of a long call unseen.
"""

from __future__ import annotations

import json
from datetime import UTC

import pytest
from helpers.clock import T0 as NOW

import autodev_shell.adapters as old_name
import autodev_shell.calls as calls
from autodev_core.detection import cli_events as events
from autodev_core.detection.reader import classify_output
from autodev_shell.calls.capture import STDOUT_TAIL_BYTES, _Capture

NOISE = json.dumps({"type": "item.started", "item": {"type": "command_execution",
                                                     "aggregated_output": "x" * 1000}})


def _captured(provider: str, first: str) -> str:
    """`first`, then more than a stdout tail of other events: what the capture hands over."""
    capture = _Capture(None, provider)
    capture.feed("stdout", (first + "\n").encode())
    line = (NOISE + "\n").encode()
    for _ in range(STDOUT_TAIL_BYTES // len(line) + 10):
        capture.feed("stdout", line)
    capture.finish()
    return capture.stdout_text()


@pytest.mark.parametrize("kind", [t for t in events.KEPT_EVENT_TYPES
                                  if t != events.ITEM_DONE_EVENT])
def test_every_event_type_the_reader_decides_by_outlives_the_tail(kind: str) -> None:
    line = json.dumps({"type": kind, "message": "probe"})
    assert line in _captured("codex", line)


def test_A37_a_codex_stream_error_seen_long_before_the_end_is_still_read_as_the_network() -> None:
    line = json.dumps({"type": "stream_error",
                       "message": "Reconnecting... 2/5 (stream disconnected before completion: "
                                  "error sending request for url)"})
    stdout = _captured("codex", line)
    assert classify_output("codex", stdout=stdout, stderr="", exit_code=1, now=NOW,
                           local_tz=UTC).kind == classify_output(
        "codex", stdout=line, stderr="", exit_code=1, now=NOW, local_tz=UTC).kind


def test_an_agent_message_item_is_the_post_that_outlives_the_tail() -> None:
    for item_type in events.MESSAGE_ITEM_TYPES:
        line = json.dumps({"type": events.ITEM_DONE_EVENT,
                           "item": {"type": item_type, "text": "the answer"}})
        assert line in _captured("codex", line)


def test_the_former_adapters_module_still_offers_every_public_name() -> None:
    # It also holds the adapter helpers of an orchestrator's own loop (docs/orchestrators.md).
    assert old_name.__all__[: len(calls.__all__)] == calls.__all__
    for name in calls.__all__:
        assert getattr(old_name, name) is getattr(calls, name)
