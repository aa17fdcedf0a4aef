"""The call ledger (docs/timeline.md): one JSON line per ended call, in the run folder.

A lane keeps only its last few megabytes (C8), so the timeline's figures cannot be read from the
lanes alone on a long run. The ledger keeps, for every call that ended (a cancelled or timed-out
one too), who made it, on what engine, from when to when, how it ended (the outcome the story
names, docs/timeline.md) and what the CLI said it cost or used — a couple of hundred bytes a call,
never a prompt, an output or an environment value:

    {"participant": "ana", "engine": "claude", "start": "…", "end": "…", "outcome": "posted",
     "cost_usd": 0.0421, "tokens": null}

The regexes that read a call's cost and tokens are here, and the lanes' reader (story/calls.py)
uses them too. Writing never stops the run: a file it cannot write (a full disk) is said once.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import attrs

from ..private import open_private
from .lanes import Lanes
from .run import CallResult

#: In the run folder, beside `lanes/` (the name starts like no lane's, so it is no lane).
LEDGER_FILE: Final = "calls.jsonl"

#: claude's JSON result: `"total_cost_usd": <dollars>` (docs/compatibility.md).
COST_RE: Final = re.compile(r'"total_cost_usd"\s*:\s*([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)')
#: codex's `tokens used` line, the count on the next line (docs/compatibility.md).
TOKENS_RE: Final = re.compile(r"^tokens used\r?\n\s*([0-9][0-9,]*)\s*$", re.M)


def reported_cost(text: str) -> float | None:
    """The last cost the CLI reported in `text` (its output), in dollars; None if none."""
    costs = COST_RE.findall(text)
    return float(costs[-1]) if costs else None


def reported_tokens(text: str) -> int | None:
    """The last token count the CLI reported in `text` (its output); None if none."""
    tokens = TOKENS_RE.findall(text)
    return int(tokens[-1].replace(",", "")) if tokens else None


def outcome(result: CallResult) -> str:
    """How the call ended, in the words of the story's `Call.outcome`: the lane's footer
    (`Lanes.end_call`) read back by story/calls.py gives the same word."""
    if result.post is not None:
        return "posted"
    if result.timed_out:
        return "timed-out"
    if result.cancelled and not result.stopped_early:
        return "cancelled"
    return result.classification.kind


@attrs.frozen
class LedgerEntry:
    """One ledger line, read back (the fields of the story's `Call`)."""

    participant: str
    engine: str
    start: datetime
    end: datetime
    outcome: str
    cost_usd: float | None
    tokens: int | None


def entry_of(participant: str, engine: str, result: CallResult) -> LedgerEntry:
    output = f"{result.stdout}\n{result.stderr}"
    return LedgerEntry(participant, engine, result.started_at, result.ended_at, outcome(result),
                       reported_cost(output), reported_tokens(output))


def ledger_line(entry: LedgerEntry) -> str:
    return json.dumps({
        "participant": entry.participant, "engine": entry.engine,
        "start": entry.start.isoformat(), "end": entry.end.isoformat(),
        "outcome": entry.outcome, "cost_usd": entry.cost_usd, "tokens": entry.tokens,
    }, ensure_ascii=False) + "\n"


class CallLedger:
    """Appends a line per ended call to `path` (0600, docs/store.md Permissions); `say` gets the
    one line that tells the ledger cannot be written, once until it can again."""

    def __init__(self, path: Path, *, say: Callable[[str], None]) -> None:
        self.path = path
        self.say = say
        #: The last append failed (a full disk); the next failure is not said again.
        self.failed = False

    def add(self, participant: str, engine: str, result: CallResult) -> None:
        line = ledger_line(entry_of(participant, engine, result)).encode("utf-8")
        try:
            fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, line)  # one write: a line is whole or cut short, never interleaved
            finally:
                os.close(fd)
        except OSError as exc:  # a full disk never stops the run: the lanes still hold the call
            if not self.failed:
                self.say(f"the call ledger {self.path} cannot be written ({exc}); the timeline "
                         "reads calls from the lanes until it can")
            self.failed = True
        else:
            self.failed = False


def ledger_for(lanes: Lanes, *, say: Callable[[str], None]) -> CallLedger:
    """The ledger of the run whose lanes are `lanes`: `calls.jsonl` in the folder that holds the
    lanes folder. The daemon makes one per run, so a failure is said once per run."""
    return CallLedger(lanes.directory.parent / LEDGER_FILE, say=say)


def read_ledger(path: Path) -> list[LedgerEntry] | None:
    """The entries of a ledger, in the order written; a line that is not a whole entry (cut by a
    crash or a full disk, or not the ledger's) is skipped. None when there is no ledger (a run
    older than the ledger) or it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    entries = []
    for line in text.splitlines():
        with suppress(ValueError, TypeError, KeyError, AttributeError):
            entries.append(_entry(json.loads(line)))
    return entries


def _entry(record: Any) -> LedgerEntry:
    start = datetime.fromisoformat(record["start"])
    end = datetime.fromisoformat(record["end"])
    cost, tokens = record.get("cost_usd"), record.get("tokens")
    if not all(isinstance(record[k], str) for k in ("participant", "engine", "outcome")):
        raise TypeError("not an entry")
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("a naive time")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        raise TypeError("cost")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
        raise TypeError("tokens")
    return LedgerEntry(record["participant"], record["engine"], start, end, record["outcome"],
                       None if cost is None else float(cost), tokens)
