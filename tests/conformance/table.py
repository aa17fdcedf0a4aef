"""The compatibility table of docs/compatibility.md, written from the kit's recorded transcripts.

    python tests/conformance/table.py            # print the table
    python tests/conformance/table.py --write    # write it into docs/compatibility.md

One row per recorded transcript (tests/fixtures/realcli/kit/, written by record.py): the CLI and
its version, the case, what the CLI printed (its key line), and what autodev reads of it — the
kind, the reset against the server's true one (A6), the usage reading — read again by the core
now, so the table always shows what this commit reads. tests/project/test_compatibility_table.py
regenerates it and compares it with the page.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `conformance` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autodev_core.detection._resets import PROBE_AFTER
from conformance.cases import BY_KEY, CASES
from conformance.transcripts import Reading, Transcript, classify_transcript, version_number

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "tests" / "fixtures" / "realcli" / "kit"
PAGE = ROOT / "docs" / "compatibility.md"
BEGIN = "<!-- compatibility: begin -->"
END = "<!-- compatibility: end -->"
#: The longest key line shown in a cell.
KEY_LINE_CHARS = 96


def transcripts(folder: Path = KIT) -> list[Transcript]:
    """Every recorded transcript in `folder`, in the case table's order, then by version."""
    found = [Transcript.from_json(json.loads(p.read_text(encoding="utf-8")))
             for p in sorted(folder.glob("*.json"))]
    order = {case.key: at for at, case in enumerate(CASES)}
    return sorted(found, key=lambda t: (order.get(t.key, len(order)), t.version))


def key_line(transcript: Transcript, reading: Reading) -> str:
    """What the CLI said that matters: the matched notice or error, the post, else the last
    line it wrote of its own (claude's result text, codex's last `ERROR:` line)."""
    if reading.text:
        return reading.text
    for line in reversed(transcript.stdout.splitlines()):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "result" and isinstance(event.get("result"), str):
            return str(event["result"])
        if event.get("type") == "item.completed":
            item = event.get("item") or {}
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                return str(item["text"])
        if event.get("type") in ("turn.failed", "error"):
            said = event.get("error", event)
            if isinstance(said, dict) and isinstance(said.get("message"), str):
                return str(said["message"])
    for line in reversed(transcript.stderr.splitlines()):
        if line.startswith("ERROR:"):
            return line
    plain = transcript.stdout.strip().splitlines()
    return plain[-1] if plain else ""


def _cell(text: str) -> str:
    """`text` on one line, its middle cut when long (a notice's reset is at its end)."""
    one = " ".join(text.split())
    if len(one) > KEY_LINE_CHARS:
        head = KEY_LINE_CHARS * 2 // 5
        one = one[:head].rstrip() + " … " + one[head - KEY_LINE_CHARS + 3 :].lstrip()
    return "`" + one.replace("`", "'").replace("|", "\\|") + "`" if one else "—"


def _offset(at: datetime, reference: datetime) -> str:
    seconds = round((at - reference).total_seconds())
    sign = "+" if seconds >= 0 else "−"
    seconds = abs(seconds)
    if seconds < 120:
        return f"{sign}{seconds} s"
    if seconds < 2 * 3600:
        return f"{sign}{seconds // 60} min"
    return f"{sign}{seconds / 3600:.1f} h"


def reset_words(transcript: Transcript, reading: Reading) -> str:
    """The reset read, against the server's true reset (A6) or the notice's instant."""
    if reading.kind != "limit":
        return "—"
    if reading.reset is None:
        return "none: the default wait (A6)"
    if reading.reset == transcript.now + PROBE_AFTER:
        return f"probe at the notice {_offset(reading.reset, transcript.now)}"
    if transcript.true_reset is not None:
        return f"server's reset {_offset(reading.reset, transcript.true_reset)}"
    return f"at the notice {_offset(reading.reset, transcript.now)}"


def row(transcript: Transcript) -> str:
    reading = classify_transcript(transcript)
    case = BY_KEY.get(transcript.key)
    usage = ", ".join(f"{w} {u:.0%}" for w, u in reading.usage) or "—"
    kind = {"failed": "failed call (A28)", "post": "post"}.get(reading.kind, reading.kind)
    note = case.note if case else "(no such case now)"
    return (f"| {transcript.cli} {version_number(transcript.version)} | {transcript.case} | "
            f"{note} | {_cell(key_line(transcript, reading))} | {kind} | "
            f"{reset_words(transcript, reading)} | {usage} | {transcript.elapsed:.1f} s |")


def table(found: Iterable[Transcript]) -> str:
    head = ("| CLI | case | the stand-in answers | read from | autodev reads | reset | "
            "usage reading | time |\n| --- | --- | --- | --- | --- | --- | --- | --- |")
    return head + "\n" + "\n".join(row(t) for t in found)


def with_table(page: str, rows: str) -> str:
    """`page` with the text between its markers replaced by `rows`."""
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[:start] + "\n" + rows + "\n" + page[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write it into {PAGE.name}")
    parser.add_argument("--kit", type=Path, default=KIT, help="the recorded transcripts")
    args = parser.parse_args(argv)
    rows = table(transcripts(args.kit))
    if not args.write:
        print(rows)
        return 0
    PAGE.write_text(with_table(PAGE.read_text(encoding="utf-8"), rows), encoding="utf-8")
    print(f"wrote {rows.count(chr(10)) - 1} rows into {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
