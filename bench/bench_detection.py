"""Time `classify_output` on adversarial and realistic output of growing size (SPEC D).

Run: `.venv/bin/python bench/bench_detection.py`. Prints seconds per call and the ratio to
the previous size; linear work keeps the ratio near the size ratio (8). Not a test: timing
belongs here, the tests count work instead (tests/core/test_detection_properties.py).

`measure(...)` (used by `bench/run.py`) times `detect_limit` against a bare `str.find` scan of the
same text, interleaved round by round, as medians of per-round ratios: over a 10 MB claude
stream-json transcript whose limit notice comes at the very end, over the same transcript at 1, 2,
4 and 8 MB (linearity), and over 1 MB adversarial inputs. Target: within 10x of the scan.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from bench_decision import cpu_time, median_ratio, timed_rounds

from autodev_core.detection import _bounded, classify_output, detect_limit, prepare_classification

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TZ = ZoneInfo("Europe/Lisbon")

INPUTS = {
    "keyword flood (stderr)": ("agy", "", "limit reached hit your 429 RESOURCE_EXHAUSTED resets "),
    "digits and colons (stderr)": ("claude", "", "resets 12:12:12:12 " + "9" * 40 + " "),
    "long model text (stdout)": ("claude", "You've hit your limit · resets 2pm (X) ", ""),
    "open brackets (stdout)": ("codex", "{[" * 10, ""),
    "stream-json events": (
        "claude",
        json.dumps({"type": "assistant", "message": {"content": [{"type": "text",
                   "text": "working on it"}]}}) + "\n",
        "",
    ),
    "network retries (stderr)": ("codex", "", "Reconnecting... 1/5\nstream disconnected\n"),
}


def _seconds(provider: str, stdout: str, stderr: str) -> float:
    start = cpu_time()
    classify_output(provider, stdout=stdout, stderr=stderr, exit_code=None, now=NOW,
                    local_tz=TZ)
    return cpu_time() - start


#: The issue's targets: detection costs at most this many bare `str.find` scans of the same
#: text, on the transcript and on the worst adversarial input.
TARGET_RATIO = 10.0
ADVERSARIAL_TARGET_RATIO = 20.0
#: Linear: doubling the input at most doubles the cost per scan, give or take this much noise.
LINEARITY_SLACK = 1.5
MB = 1_000_000
NOTICE = "You've hit your limit · resets 2:30pm (Europe/Lisbon)"
#: What the bare scan looks for: the notice's phrase, found only at the very end of the text.
SCAN_FOR = "hit your limit"


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False) + "\n"


def claude_transcript(size: int) -> str:
    """A claude `--output-format stream-json` transcript of about `size` characters: an init,
    then assistant text, tool calls and their (long) results, and at the very end the limit
    notice as the last assistant message and the error result (A2-A5)."""
    head = _line({"type": "system", "subtype": "init", "session_id": "s1", "model": "opus",
                  "tools": ["Bash", "Read", "Edit"], "cwd": "/work/repo"})
    turn = "".join((
        _line({"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "text", "text": "Let me look at the failing test and the module it covers."}
        ]}, "session_id": "s1"}),
        _line({"type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash",
             "input": {"command": "pytest -q tests/test_store.py -x"}}]}, "session_id": "s1"}),
        _line({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1",
             "content": "tests/shell/test_store.py ........F\n" + "E   assert 3 == 4\n" * 40}]},
            "session_id": "s1"}),
        _line({"type": "assistant", "message": {"id": "m3", "role": "assistant", "content": [
            {"type": "text", "text": "The revision counter is off by one; fixing commit()."}
        ]}, "session_id": "s1"}),
    ))
    tail = "".join((
        _line({"type": "assistant", "message": {"id": "m9", "role": "assistant", "content": [
            {"type": "text", "text": NOTICE}]}, "session_id": "s1"}),
        _line({"type": "result", "subtype": "success", "is_error": True, "result": NOTICE,
               "session_id": "s1", "num_turns": 40}),
    ))
    body = turn * max(1, (size - len(head) - len(tail)) // len(turn))
    return head + body + tail


#: 1 MB adversarial inputs: (name, provider, stream, chunk repeated to 1 MB, notice appended?).
ADVERSARIAL = (
    ("keyword flood", "agy", "stderr", "limit reached hit your 429 RESOURCE_EXHAUSTED resets "),
    ("digits and colons", "claude", "stderr", "resets 12:12:12:12 " + "9" * 40 + " "),
    ("open brackets", "codex", "stdout", "{[" * 10),
    ("one huge JSON line", "claude", "stdout", '{"type":"user","x":"' + "a" * 1000),
    ("network retries", "codex", "stderr", "Reconnecting... 1/5\nstream disconnected\n"),
)


def _adversarial(chunk: str, size: int) -> str:
    return (chunk * (size // len(chunk) + 1))[:size]


def _detect(provider: str, stream: str, text: str, expect: bool) -> Callable[[], float]:
    stdout, stderr = (text, "") if stream == "stdout" else ("", text)

    def run() -> float:
        began = cpu_time()
        found = detect_limit(provider, stdout=stdout, stderr=stderr, now=NOW, local_tz=TZ)
        took = cpu_time() - began
        if expect and found is None:
            raise AssertionError("the notice at the end of the transcript was not found")
        return took

    return run


def _scan(text: str) -> Callable[[], float]:
    def run() -> float:
        began = cpu_time()
        text.find(SCAN_FOR)
        return cpu_time() - began

    return run


def _decode(text: str) -> Callable[[], float]:
    """The floor of reading a stream-json transcript at all: `json.loads` of every line."""

    def run() -> float:
        began = cpu_time()
        for line in text.splitlines():
            if line.startswith("{"):
                json.loads(line)
        return cpu_time() - began

    return run


def _pair(provider: str, stream: str, text: str, expect: bool, rounds: int,
          decode: bool = False) -> dict[str, float]:
    subjects = [_detect(provider, stream, text, expect), _scan(text)]
    if decode:
        subjects.append(_decode(text))
    figures = timed_rounds(subjects, rounds)
    detect_s, scan_s = figures[0], figures[1]
    out = {"ratio": median_ratio(detect_s, scan_s), "detect_ms": statistics.median(detect_s)
           * 1e3, "scan_ms": statistics.median(scan_s) * 1e3, "chars": len(text)}
    if decode:
        out["decode_ms"] = statistics.median(figures[2]) * 1e3
        out["decode_ratio"] = median_ratio(detect_s, figures[2])
    return out


def wide(transcript: str) -> str:
    """The transcript with a character past U+00FF in each turn's text (a curly apostrophe, as
    claude writes them): no longer latin-1."""
    return transcript.replace("Let me look", "Let\u2019s look")


def _classify(text: str) -> Callable[[], float]:
    """`classify_output` (what the shell calls on each call's output) over the transcript."""

    def run() -> float:
        began = cpu_time()
        found = classify_output("claude", stdout=text, exit_code=1, now=NOW, local_tz=TZ)
        took = cpu_time() - began
        if found.kind != "limit":
            raise AssertionError("the notice at the end of the transcript was not found")
        return took

    return run


def measure(rounds: int, big: int = 10 * MB, sizes: tuple[int, ...] = (1, 2, 4, 8),
            adversarial: int = MB) -> dict[str, Any]:
    text = claude_transcript(big)
    transcript = _pair("claude", "stdout", text, True, rounds, decode=True)
    # Context (no target): the transcript not latin-1, and read by `classify_output`.
    context = {"not latin-1": _pair("claude", "stdout", wide(text), True, rounds)}
    classified = timed_rounds([_classify(text), _scan(text)], rounds)
    context["classify_output"] = {
        "ratio": median_ratio(classified[0], classified[1]),
        "detect_ms": statistics.median(classified[0]) * 1e3,
        "scan_ms": statistics.median(classified[1]) * 1e3, "chars": len(text)}
    linear = {n: _pair("claude", "stdout", claude_transcript(n * MB), True, rounds)
              for n in sizes}
    attacks = {name: _pair(provider, stream, _adversarial(chunk, adversarial), False, rounds)
               for name, provider, stream, chunk in ADVERSARIAL}
    # Linear: the ratio to the (linear) scan stays put from the smallest size to the largest,
    # i.e. the cost per character at 8 MB is within the slack of the cost per character at 1 MB.
    growth = linear[sizes[-1]]["ratio"] / linear[sizes[0]]["ratio"]
    return {"transcript": transcript, "linear": linear, "adversarial": attacks,
            "growth": growth, "linear_met": growth <= LINEARITY_SLACK, "rounds": rounds,
            "context": context}


# The answers of the 30-day storm (bench_simulation.py: each distinct text is read once per
# run), as real CLIs print them: short, where the detectors' fixed costs dominate.
SHORT_ANSWERS = (
    *(("claude", f"You've hit your limit · resets {h}pm (Europe/Lisbon)", "") for h in (1, 5)),
    *(("codex", "", "You've hit your usage limit. Upgrade to Pro or try again in "
       f"{h} hours 2 minutes.") for h in (1, 5)),
    *(("agy", "", f"Individual quota reached. Resets in {h}h31m33s.") for h in (1, 5)),
    *((p, "", "getaddrinfo ENOTFOUND api.example.com") for p in ("claude", "codex", "agy")),
    ("agy", "", ""),
)


def _short_answers(shortcuts: bool, classify: bool, repeat: int = 200) -> Callable[[], float]:
    """Seconds per call over SHORT_ANSWERS, with the detectors' shortcuts for short texts on or
    off (`_bounded.PRECHECKS`: off, every pattern is searched whole)."""

    def run() -> float:
        _bounded.PRECHECKS = shortcuts
        try:
            start = cpu_time()
            for _ in range(repeat):
                for provider, stdout, stderr in SHORT_ANSWERS:
                    if classify:
                        classify_output(provider, stdout=stdout, stderr=stderr, exit_code=1,
                                        now=NOW, local_tz=TZ)
                    else:
                        prepare_classification(provider, stdout=stdout, stderr=stderr,
                                               exit_code=1)
            return (cpu_time() - start) / (repeat * len(SHORT_ANSWERS))
        finally:
            _bounded.PRECHECKS = True

    return run


def short_answers(rounds: int = 9) -> dict[str, dict[str, float]]:
    """µs per call on the storm's answers, shortcuts on and off, and the median ratio."""
    found = {}
    for name, classify in (("prepare_classification", False), ("classify_output", True)):
        on, off = timed_rounds([_short_answers(True, classify), _short_answers(False, classify)],
                               rounds)
        found[name] = {"on_us": statistics.median(on) * 1e6,
                       "off_us": statistics.median(off) * 1e6,
                       "speedup": median_ratio(off, on)}
    return found


def main() -> None:
    for name, figures in short_answers().items():
        print(f"{name} on the storm's answers: {figures['on_us']:.1f} µs per call, "
              f"{figures['off_us']:.1f} µs with every pattern searched whole "
              f"(x{figures['speedup']:.2f})")
    for name, (provider, out_chunk, err_chunk) in INPUTS.items():
        previous = None
        cells = []
        for size in (1_000, 8_000, 64_000):
            elapsed = _seconds(provider, out_chunk * size, err_chunk * size)
            ratio = f" (x{elapsed / previous:.1f})" if previous else ""
            cells.append(f"{size:>6}: {elapsed * 1000:8.1f} ms{ratio}")
            previous = elapsed
        print(f"{name:<28} " + " | ".join(cells))


if __name__ == "__main__":
    main()
