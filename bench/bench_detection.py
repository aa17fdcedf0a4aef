"""Time `classify_output` on adversarial and realistic output of growing size (SPEC D).

Run: `.venv/bin/python bench/bench_detection.py`. Prints seconds per call and the ratio to
the previous size; linear work keeps the ratio near the size ratio (8). Not a test: timing
belongs here, the tests count work instead (tests/test_detection_properties.py).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from autodev_core.detection import classify_output

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
    start = time.perf_counter()
    classify_output(provider, stdout=stdout, stderr=stderr, exit_code=None, now=NOW,
                    local_tz=TZ)
    return time.perf_counter() - start


def main() -> None:
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
