"""Regexes that only ever see short text, so detection stays linear (SPEC D: pure and total).

Keywords are found with `str.find` on lower-cased text (`keyword_hits`: linear, no regex).
Every detail pattern of the detectors runs through `search`/`match` here, on a window cut
around a keyword hit. The window is capped at `MAX_WINDOW` characters, so a pattern's
work is bounded by a constant whatever it is, and the detectors' total regex work is the
number of keyword hits (capped per text) times that constant. A `Meter` lets tests count
that work deterministically instead of timing it.
"""

from __future__ import annotations

import re

import attrs

# Longest text a detail regex ever sees: a keyword's window (notice plus its reset).
MAX_WINDOW = 1_000
# Keyword hits examined per text unit; later hits repeat earlier ones (a CLI retrying).
MAX_HITS_PER_UNIT = 64


@attrs.define
class Meter:
    """Counts regex work (calls and characters) for the linear-time tests."""

    calls: int = 0
    chars: int = 0
    longest: int = 0
    keyword_scans: int = 0
    scanned_chars: int = 0

    def regex(self, size: int) -> None:
        self.calls += 1
        self.chars += size
        self.longest = max(self.longest, size)

    def scan(self, size: int) -> None:
        self.keyword_scans += 1
        self.scanned_chars += size


def search(pattern: re.Pattern[str], text: str, meter: Meter | None) -> re.Match[str] | None:
    window = text[:MAX_WINDOW]
    if meter is not None:
        meter.regex(len(window))
    return pattern.search(window)


def match(pattern: re.Pattern[str], text: str, meter: Meter | None) -> re.Match[str] | None:
    window = text[:MAX_WINDOW]
    if meter is not None:
        meter.regex(len(window))
    return pattern.match(window)


def keyword_hits(
    keywords: tuple[str, ...], text: str, meter: Meter | None
) -> list[tuple[int, str]]:
    """Where the (lower-case, literal) `keywords` occur in `text`, in order, case-insensitively.

    `str.find` on the lower-cased text: linear and fast, no regex. At most `MAX_HITS_PER_UNIT`
    hits per keyword are kept. When lower-casing changes the length (a few non-ASCII letters),
    positions would shift, so those characters are searched as written.
    """
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    if meter is not None:
        meter.scan(len(text) * len(keywords))
    hits: list[tuple[int, str]] = []
    for keyword in keywords:
        pos = lowered.find(keyword)
        count = 0
        while pos != -1 and count < MAX_HITS_PER_UNIT:
            hits.append((pos, keyword))
            count += 1
            pos = lowered.find(keyword, pos + len(keyword))
    hits.sort()
    return hits


def window(text: str, start: int, *, before: int, after: int) -> tuple[str, int]:
    """The text around `start` and the offset of `start` inside it."""
    lo = max(0, start - before)
    hi = min(len(text), start + after, lo + MAX_WINDOW)
    return text[lo:hi], start - lo
