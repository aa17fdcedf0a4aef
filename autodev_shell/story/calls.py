"""The calls of a run as its lanes tell them (C8), for the timeline and its figures.

A lane holds each call between a header (`=== <at> <id> on <engine>: <argv>`) and a footer
(`=== <at> <how it ended>; read as <kind>[; posted…]`), with every byte the CLI wrote between
them. What a call cost is read where the CLI says it: claude's `"total_cost_usd": <dollars>` in its
JSON result, codex's `tokens used` line followed by the count (docs/compatibility.md; the
recordings in tests/fixtures/realcli/). A lane keeps its last few megabytes (C8): older calls are
gone from the figures too.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Final

from ..calls.lanes import LANE_FILES, NoLaneError, read_lane
from .timeline import Call

_AT = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z))"
_HEADER: Final = re.compile(rf"^=== {_AT} ([A-Za-z0-9][A-Za-z0-9_.\-]*) on (\S+): ", re.M)
# A limit's footer adds its reading (` until … (from the notice)`, docs/shell.md) after the kind.
_FOOTER: Final = re.compile(
    rf"^=== {_AT} (.*); read as ([a-z-]+)(?: [^;\n]*)?(; posted[^\n]*)?$", re.M)
_COST: Final = re.compile(r'"total_cost_usd"\s*:\s*([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)')
_TOKENS: Final = re.compile(r"^tokens used\r?\n\s*([0-9][0-9,]*)\s*$", re.M)


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
        costs = _COST.findall(body)
        tokens = _TOKENS.findall(body)
        calls.append(Call(
            participant=header.group(2), engine=header.group(3), start=start, end=end,
            outcome=outcome, cost_usd=float(costs[-1]) if costs else None,
            tokens=int(tokens[-1].replace(",", "")) if tokens else None,
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
