"""A mermaid state diagram of the run's statuses, generated from `TRANSITIONS` (STYLE: h2).

docs/scheduler.md embeds exactly this text (a test checks it), so the picture cannot drift from
the code.
"""

from __future__ import annotations

from .effects import STATUSES
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
