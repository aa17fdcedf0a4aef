"""A conformance case's transcript and autodev's reading of it, for the recorded checks
(SPEC A2-A6, A26-A28). Core only: nothing here runs a CLI (kit.py does).

- `Transcript`: what a CLI wrote as autodev's shell captured it, when, and what the stand-in
  saw; `to_json()`/`from_json()` are its recorded form (`<cli>-<version>-<case>.json`);
- `Reading`: what autodev read (kind, reset, usage); `reading_from(classification, post)`,
  `classify_transcript(transcript)` (the shell's reading, done again on a recorded transcript);
- `mismatches(case, transcript, reading)`: where a reading differs from `case.expect`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import attrs

from autodev_core.detection import Classification, classify_output, extract_post

from .cases import Case

if TYPE_CHECKING:
    from autodev_shell.calls import CallResult

#: A3: a reset read from a printed clock time is right to the printed minute.
SERVER_RESET_TOLERANCE = timedelta(seconds=60)
#: A6: a reset that is not after now is probed again one minute after the notice (+ slack).
PROBE_WINDOW = timedelta(seconds=70)


def version_number(version: str) -> str:
    """`2.1.332` of `2.1.332 (Claude Code)`, `0.171.0` of `codex-cli 0.171.0`."""
    found = re.search(r"\d+\.\d+\.\d+", version)
    return found.group(0) if found else (version.split() or ["unknown"])[0]


# -- transcripts ----------------------------------------------------------------------------------


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(UTC).isoformat()


def _from_iso(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(UTC)


@attrs.frozen
class Transcript:
    """One case run: what the CLI wrote (as autodev's shell captured it), when, and what the
    stand-in saw. `result` is the shell's `CallResult` (None for a transcript read back from a
    file). `now` is the call's end, the instant its output was read at."""

    case: str
    cli: str
    json: bool
    version: str
    tz: str
    true_reset: datetime | None
    started: datetime
    now: datetime
    stdout: str
    stderr: str
    exit_code: int
    killed: bool
    elapsed: float
    requests: int
    request_lines: tuple[str, ...] = ()
    result: CallResult | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def key(self) -> str:
        return f"{self.cli}-{self.case}"

    def file_name(self) -> str:
        """`<cli>-<version>-<case>.json`."""
        return f"{self.cli}-{version_number(self.version)}-{self.case}.json"

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case, "cli": self.cli, "json": self.json, "version": self.version,
            "tz": self.tz, "true_reset": _iso(self.true_reset), "started": _iso(self.started),
            "now": _iso(self.now), "elapsed": round(self.elapsed, 3),
            "exit": self.exit_code, "killed": self.killed, "requests": self.requests,
            "request_lines": list(self.request_lines), "stdout": self.stdout,
            "stderr": self.stderr,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Transcript:
        now = _from_iso(data["now"])
        started = _from_iso(data.get("started")) or now
        assert now is not None and started is not None
        return cls(
            case=data["case"], cli=data["cli"], json=bool(data.get("json", False)),
            version=data["version"], tz=data["tz"], true_reset=_from_iso(data["true_reset"]),
            started=started, now=now, stdout=data["stdout"], stderr=data["stderr"],
            exit_code=int(data["exit"]), killed=bool(data.get("killed", False)),
            elapsed=float(data["elapsed"]), requests=int(data["requests"]),
            request_lines=tuple(data.get("request_lines", ())),
        )

    def tail(self, lines: int = 12, width: int = 400) -> str:
        """The last lines of stdout and stderr (each cut to `width`), for an assertion's
        message."""

        def last(text: str) -> str:
            kept = [line if len(line) <= width else line[:width] + " …"
                    for line in text.splitlines()[-lines:]]
            return "\n".join(kept)

        return (f"--- {self.key}: exit {self.exit_code}, {self.elapsed:.1f} s, "
                f"{self.requests} request(s)\n--- stdout (tail)\n{last(self.stdout)}\n"
                f"--- stderr (tail)\n{last(self.stderr)}")


# -- readings -------------------------------------------------------------------------------------


@attrs.frozen
class Reading:
    """What autodev read of a call: its kind (post, limit, network, login, failed), the
    limit's reset (UTC or None), the usage reported ((window, utilization) pairs) and the text
    matched."""

    kind: str
    reset: datetime | None
    usage: tuple[tuple[str, float], ...]
    text: str = ""


def _usage_pairs(usage: Any) -> tuple[tuple[str, float], ...]:
    """`Classification.usage` as (window, utilization) pairs: one reading, or several."""
    if usage is None:
        return ()
    readings = usage if isinstance(usage, tuple | list) else (usage,)
    return tuple((str(r.window), float(r.utilization)) for r in readings)


def reading_from(classification: Classification, post: str | None) -> Reading:
    """The reading of a classification and a post (as `CallResult` carries them)."""
    kind: str
    if classification.kind == "other":
        kind = "post" if post is not None else "failed"
    else:
        kind = classification.kind
    reset = classification.limit.reset_at if classification.limit is not None else None
    return Reading(kind=kind, reset=reset, usage=_usage_pairs(classification.usage),
                   text=classification.text)


def classify_transcript(transcript: Transcript) -> Reading:
    """Read a transcript as the shell does (`classify_output` at its `now`, in its zone, and
    `extract_post` on a call that ended by itself with exit 0)."""
    ended = not transcript.killed
    classification = classify_output(
        transcript.cli, stdout=transcript.stdout, stderr=transcript.stderr,
        exit_code=transcript.exit_code if ended else None, now=transcript.now,
        local_tz=ZoneInfo(transcript.tz))
    post = (extract_post(transcript.cli, transcript.stdout)
            if ended and transcript.exit_code == 0 else None)
    return reading_from(classification, post)


def mismatches(case: Case, transcript: Transcript, reading: Reading) -> list[str]:
    """Where `reading` of `transcript` differs from `case.expect` (empty: it conforms)."""
    expect = case.expect
    found: list[str] = []
    if reading.kind != expect.kind:
        found.append(f"kind: read {reading.kind!r} ({reading.text[:160]!r}), "
                     f"expected {expect.kind!r}")
    now = transcript.now
    if expect.reset == "server":
        true = transcript.true_reset
        if reading.reset is None:
            found.append(f"reset: none read, expected the server's {_iso(true)}")
        elif true is not None and abs(reading.reset - true) >= SERVER_RESET_TOLERANCE:
            found.append(f"reset: read {_iso(reading.reset)}, server's true reset {_iso(true)} "
                         f"({(reading.reset - true).total_seconds():+.0f} s)")
    elif expect.reset == "probe":
        if reading.reset is None:
            found.append("reset: none read, expected a probe within a minute of now")
        elif not now <= reading.reset <= now + PROBE_WINDOW:
            found.append(f"reset: read {_iso(reading.reset)}, expected a probe between now "
                         f"({_iso(now)}) and {PROBE_WINDOW.total_seconds():.0f} s later "
                         f"({(reading.reset - now).total_seconds():+.0f} s from now)")
    elif expect.reset == "none" and reading.reset is not None:
        found.append(f"reset: read {_iso(reading.reset)}, expected none")
    if expect.usage:
        got = dict(reading.usage)
        want = dict(expect.usage)
        if set(got) != set(want) or any(abs(got[w] - want[w]) > 1e-9 for w in want):
            found.append(f"usage: read {sorted(got.items())}, expected {sorted(want.items())}")
    return found
