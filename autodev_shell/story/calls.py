"""The calls of a run for the timeline and its figures: its call ledger, and its lanes (C8).

The ledger (`calls.jsonl`, autodev_shell/calls/ledger.py) holds a line for every call that ended,
however long the run; the lanes only their last few megabytes. So a run folder's calls are the
ledger's, and the lanes' for what the ledger lacks: the call in flight, a call whose line the disk
did not take, and every call of a run older than the ledger (which the lanes alone tell, their
older calls gone as today).

A lane holds each call between a header (`=== <at> <id> on <engine>: <argv>`) and a footer
(`=== <at> <how it ended>; read as <kind>[; posted…]`), with every byte the CLI wrote between
them. What a call cost is read where the CLI says it, with the ledger's own regexes: claude's
`"total_cost_usd": <dollars>` in its JSON result, codex's `tokens used` line followed by the count
(docs/compatibility.md; the recordings in tests/fixtures/realcli/). A lane call is the ledger's
when the ledger has a call of the same participant ending in the same second (the footer's time).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Final

from ..calls.lanes import LANE_FILES, NoLaneError, read_lane
from ..calls.ledger import LEDGER_FILE, read_ledger, reported_cost, reported_tokens
from ..store.folder import LANES_DIR
from .timeline import Call

_AT = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z))"
_HEADER: Final = re.compile(rf"^=== {_AT} ([A-Za-z0-9][A-Za-z0-9_.\-]*) on (\S+): ", re.M)
# A limit's footer adds its reading (` until … (from the notice)`, docs/shell.md) after the kind.
_FOOTER: Final = re.compile(
    rf"^=== {_AT} (.*); read as ([a-z-]+)(?: [^;\n]*)?(; posted[^\n]*)?$", re.M)


def parse_lane(text: str) -> list[Call]:
    """The calls of one lane's text, oldest first; the last one has no end while in flight."""
    calls: list[Call] = []
    headers = list(_HEADER.finditer(text))
    for index, header in enumerate(headers):
        stop = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = text[header.end():stop]
        start = datetime.fromisoformat(header.group(1))
        # The last footer of the call: a CLI's own output could hold a line like one, never after.
        footers = list(_FOOTER.finditer(body))
        footer = footers[-1] if footers else None
        end: datetime | None = None
        outcome = "open"
        if footer is not None:
            end = datetime.fromisoformat(footer.group(1))
            how = footer.group(2)
            if footer.group(4):
                outcome = "posted"
            elif how.startswith("timed out"):
                outcome = "timed-out"
            elif how == "cancelled":
                outcome = "cancelled"
            else:
                outcome = footer.group(3)
            body = body[:footer.start()]
        calls.append(Call(
            participant=header.group(2), engine=header.group(3), start=start, end=end,
            outcome=outcome, cost_usd=reported_cost(body), tokens=reported_tokens(body),
        ))
    return calls


def read_calls(lanes_dir: Path) -> list[Call]:
    """Every participant's calls from the lanes in `lanes_dir` (none when it has no lanes)."""
    calls: list[Call] = []
    try:
        names = sorted({p.name.split(".log", 1)[0] for p in lanes_dir.glob("*.log*")})
    except OSError:
        return []
    for name in names:
        try:
            calls.extend(parse_lane(read_lane(lanes_dir, name, files=LANE_FILES)))
        except (NoLaneError, ValueError, OSError):
            continue
    return sorted(calls, key=lambda c: c.start)


def run_calls(run_dir: Path) -> list[Call]:
    """Every call of the run in `run_dir`: its ledger's, and its lanes' that the ledger lacks
    (see the module's doc); the lanes' alone when it has no ledger."""
    lanes = read_calls(run_dir / LANES_DIR)
    entries = read_ledger(run_dir / LEDGER_FILE)
    if entries is None:
        return lanes
    calls = [Call(e.participant, e.engine, e.start, e.end, e.outcome, e.cost_usd, e.tokens)
             for e in entries]
    known = {(c.participant, c.end.replace(microsecond=0)) for c in calls if c.end is not None}
    calls += [c for c in lanes if c.end is None or (c.participant, c.end) not in known]
    return sorted(calls, key=lambda c: c.start)
