"""The run's transitions drawn from `TRANSITIONS` (STYLE: h2): a mermaid state diagram and the
status × event table.

docs/scheduler.md embeds exactly this text (a test checks it), so the page cannot drift from
the code.
"""

from __future__ import annotations

from .effects import STATUSES
from .events import EVENT_TYPES
from .step import TRANSITIONS


def mermaid() -> str:
    """`stateDiagram-v2` text: one edge per (from, to) pair, labelled with the events, sorted."""
    edges: dict[tuple[str, str], set[str]] = {}
    for (source, event_type), (_handler, targets) in TRANSITIONS.items():
        for target in targets:
            if target != source:
                edges.setdefault((source, target), set()).add(event_type.__name__)
    order: dict[str, int] = {status: i for i, status in enumerate(STATUSES)}
    lines = ["stateDiagram-v2", "    [*] --> stopped"]
    for origin, goal in sorted(edges, key=lambda e: (order[e[0]], order[e[1]])):
        label = ", ".join(sorted(edges[(origin, goal)]))
        lines.append(f"    {origin} --> {goal} : {label}")
    return "\n".join(lines) + "\n"


def table() -> str:
    """The status × event table as markdown: a row per event type, a column per status; each
    entry names the handler (`step.py`'s `_on_…`, without the prefix) and the statuses it may
    lead to (`=` when it stays in its status), `—` when the pair is refused
    (`SchedulerProtocolError`)."""
    lines = [
        "| event \\ status | " + " | ".join(f"`{status}`" for status in STATUSES) + " |",
        "| --- |" + " --- |" * len(STATUSES),
    ]
    for event_type in EVENT_TYPES:
        cells = []
        for status in STATUSES:
            entry = TRANSITIONS.get((status, event_type))
            if entry is None:
                cells.append("—")
                continue
            handler, targets = entry
            name = handler.__name__.removeprefix("_on_").removeprefix("_")
            if targets == frozenset((status,)):
                cells.append(f"{name} =")
            else:
                goals = ", ".join(s for s in STATUSES if s in targets)
                cells.append(f"{name} → {goals}")
        lines.append(f"| `{event_type.__name__}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
