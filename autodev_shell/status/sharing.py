"""What `autodev status` says about limit sharing (docs/sharing.md), from the file the daemon writes
beside the store (no password in it). Apart from `sharing` so that `autodev status` reads it
without loading the sharing client (docs/performance.md); `sharing` re-exports these names."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def sharing_facts(status_file: Path, *, running: bool = True) -> dict[str, Any] | None:
    """What the daemon wrote about its sharing (no password), or None when it shares nothing,
    or when no daemon is running (a file a killed daemon left behind says nothing true)."""
    if not running:
        return None
    try:
        data = json.loads(status_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def sharing_line(facts: Mapping[str, Any] | None) -> str:
    """`autodev status`'s sharing line, from `sharing_facts`."""
    if facts is None:
        return "sharing: off"
    accounts = ", ".join(f"{p} as {a}" for p, a in sorted(facts.get("accounts", {}).items()))
    state = "on" if facts.get("state") == "on" else "lost (the run carries on with its own limits)"
    problems = facts.get("problems")
    wrong = "".join(f"; {p}" for p in problems if isinstance(p, str)) if isinstance(
        problems, list) else ""
    return (
        f"sharing: {state} — {facts.get('url')} (prefix {facts.get('prefix')}, "
        f"this run is {facts.get('name')!r}; accounts: {accounts}){wrong}"
    )


def status_lines(status_file: Path) -> list[str]:
    """`autodev status`: whether the run shares its limits, and where (no password)."""
    return [sharing_line(sharing_facts(status_file))]
