"""Regexes that only ever see short text, so detection stays linear (SPEC D: pure and total).

Keywords are found with `str.find` on lower-cased text (`keyword_hits`: linear, no regex).
Every detail pattern of the detectors runs through `search`/`match` here, on a window cut
around a keyword hit. The window is capped at `MAX_WINDOW` characters, so a pattern's
work is bounded by a constant whatever it is, and the detectors' total regex work is the
number of keyword hits (capped per text) times that constant. A `Meter` lets tests count
that work deterministically instead of timing it.
"""

from __future__ import annotations

import functools
import re

import attrs

# Longest text a detail regex ever sees: a keyword's window (notice plus its reset).
MAX_WINDOW = 1_000
# Keyword hits examined per text unit; later hits repeat earlier ones (a CLI retrying).
MAX_HITS_PER_UNIT = 64

#: Whether the shortcuts for short texts run (`Alternatives`, `keyword_hits`); False: every
#: pattern is searched whole and keywords are found through shared words, as they always were
#: (the reference the shortcuts are tested against).
PRECHECKS = True


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
    hits per keyword are kept (the first ones, not overlapping one another). When lower-casing
    changes the length (a few non-ASCII letters), positions would shift, so those characters
    are searched as written.

    Keywords sharing a word are found through it: one pass finds `limit` for the seven limit
    keywords that contain it, then each spot is checked for the keywords themselves. Should a
    shared word be everywhere (`_SHARED_SPOTS_MAX` spots), its keywords are searched one by one
    instead, so the work never exceeds one pass per keyword plus that constant.
    """
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    if meter is not None:
        meter.scan(len(text) * len(keywords))
    hits: list[tuple[int, str]] = []
    if len(lowered) <= _SHORT and PRECHECKS:
        # A short text: a pass per shared word, then per keyword holding one that is there.
        for shared, group in _groups(keywords):
            if shared in lowered:
                for keyword, _ in group:
                    if keyword is shared or keyword in lowered:
                        _one_by_one(lowered, keyword, hits)
    else:
        _find_groups(lowered, keywords, frozenset(), set(), hits, set())
    hits.sort()
    return hits


# Texts up to this long are searched a keyword at a time (no shared words, no rare letters).
_SHORT = 2_048


# Letters from the rarest in English on: a word holding one the text lacks is not there, and a
# letter's absence costs one `memchr` (where a word's costs a slower search). Only the rarer
# letters are tried, so that a text holding each of them late costs a few such scans at most.
_RARE_LETTERS = "zqjxkvbpygfwm"


def _lacks(lowered: str, word: str, absent: set[str], present: set[str]) -> bool:
    """Whether `lowered` surely lacks `word`: it lacks one of the word's rare letters (each
    letter looked for once per text, the answer kept in `absent` or `present`)."""
    for letter in _RARE_LETTERS:
        if letter in word and letter not in present:
            if letter in absent or letter not in lowered:
                absent.add(letter)
                return True
            present.add(letter)
    return False


def _find_groups(
    lowered: str,
    keywords: tuple[str, ...],
    dense: frozenset[str],
    absent: set[str],
    hits: list[tuple[int, str]],
    present: set[str],
) -> None:
    for shared, group in _groups(keywords, dense):
        if (
            any(word in shared for word in absent)
            or _lacks(lowered, shared, absent, present)
            or shared not in lowered
        ):
            absent.add(shared)  # every keyword of the group contains it: none is there
            continue
        if len(group) == 1:
            _one_by_one(lowered, shared, hits)
        elif not _through_shared(lowered, shared, group, hits):
            # The shared word is everywhere: group these keywords again under other words
            # (in the end each is its own), so that the absent ones cost a pass per word.
            left = tuple(k for k, _ in group if not any(word in k for word in absent))
            _find_groups(lowered, left, dense | {shared}, absent, hits, present)


# Spots of a shared word examined before its keywords are searched one by one instead.
_SHARED_SPOTS_MAX = 4 * MAX_HITS_PER_UNIT
# Shortest shared word worth a pass of its own (shorter ones are everywhere in prose).
_SHARED_MIN = 4
# Longest shared word considered (longer ones are rarely shared; keeps grouping cheap).
_SHARED_LONGEST = 9


def _one_by_one(lowered: str, keyword: str, hits: list[tuple[int, str]]) -> None:
    pos = lowered.find(keyword)
    count = 0
    while pos != -1 and count < MAX_HITS_PER_UNIT:
        hits.append((pos, keyword))
        count += 1
        pos = lowered.find(keyword, pos + len(keyword))


def _through_shared(
    lowered: str, shared: str, group: tuple[tuple[str, int], ...], hits: list[tuple[int, str]]
) -> bool:
    """Add the hits of `group` found through the spots of `shared`; False (nothing added) when
    the shared word has too many spots, so the caller searches the keywords one by one."""
    # The spots first, alone (a find each): a word found everywhere is given up on before any
    # keyword is checked at its spots.
    spots: list[int] = []
    spot = lowered.find(shared)
    while spot != -1:
        if len(spots) == _SHARED_SPOTS_MAX:
            return False
        spots.append(spot)
        spot = lowered.find(shared, spot + 1)
    found: list[tuple[int, str]] = []
    counts = [0] * len(group)
    next_free = [0] * len(group)  # a keyword's next hit starts after its previous one (no overlap)
    full = 0
    for spot in spots:
        if full == len(group):
            break
        for index, (keyword, offset) in enumerate(group):
            start = spot - offset
            if (
                counts[index] < MAX_HITS_PER_UNIT
                and start >= next_free[index]
                and lowered.startswith(keyword, start)
            ):
                found.append((start, keyword))
                counts[index] += 1
                next_free[index] = start + len(keyword)
                if counts[index] == MAX_HITS_PER_UNIT:
                    full += 1
    hits.extend(found)
    return True


@functools.cache
def _groups(
    keywords: tuple[str, ...], dense: frozenset[str] = frozenset()
) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    """Keywords grouped under a word they share (each keyword once, with the word's offset in
    it): greedily the word shared by most keywords not yet grouped, longest first on ties.
    Words holding or held by one of `dense` (found everywhere) are not used."""
    left = list(dict.fromkeys(keywords))
    groups: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    while left:
        best = left[0]
        best_members = [left[0]]
        words = {
            keyword[at : at + size]
            for keyword in left
            for size in range(_SHARED_MIN, min(len(keyword), _SHARED_LONGEST) + 1)
            for at in range(len(keyword) - size + 1)
        }
        words = {w for w in words if not any(d in w or w in d for d in dense)}
        for word in sorted(words):  # sorted: the same groups on every run
            members = [k for k in left if word in k]
            if (len(members), len(word)) > (len(best_members), len(best)):
                best, best_members = word, members
        if len(best_members) == 1:  # nothing shared: the keyword is its own word
            best = best_members[0]
        groups.append((best, tuple((k, k.find(best)) for k in best_members)))
        left = [k for k in left if k not in best_members]
    return tuple(groups)


def window(text: str, start: int, *, before: int, after: int) -> tuple[str, int]:
    """The text around `start` and the offset of `start` inside it."""
    lo = max(0, start - before)
    hi = min(len(text), start + after, lo + MAX_WINDOW)
    return text[lo:hi], start - lo


# --- Pre-checks: a pattern's alternatives that cannot match are not tried ----------------
#
# An IGNORECASE search over a short text costs far more than a few `in` tests: the regex
# engine tries every alternative at every position. An alternative whose literal words are
# not in the text matches nowhere in it, so leaving it out of the pattern changes nothing (not
# the match, not which alternative wins at a position). `Alternatives` keeps a pattern as its
# alternatives, each with the words it cannot match without, and searches with those whose
# words the text holds (no regex at all when none does).
#
# The words are looked for in the text `fold`ed: lower-cased, and with the three non-ASCII
# letters an IGNORECASE pattern takes for ASCII ones written as those (U+0130 `İ` and U+0131
# `ı` for `i`, U+017F `ſ` for `s`; KELVIN SIGN lower-cases to `k` by itself). Wherever such a
# pattern matches ASCII letters, the folded text holds them in lower case at the same place
# (tests/core/test_detection_prechecks.py checks that against every code point).

# How many patterns an `Alternatives` keeps (one per set of its words found together).
_PATTERNS_KEPT = 64

_TO_ASCII = {0x130: "i", 0x131: "i", 0x17F: "s"}


def fold(text: str) -> str:
    """`text` lower-cased, with the non-ASCII letters IGNORECASE reads as ASCII ones written as
    those: the same length, each character in its place."""
    if text.isascii() or not ("\u0130" in text or "\u0131" in text or "\u017f" in text):
        return text.lower()  # the same length: only U+0130 lower-cases to two characters
    return text.translate(_TO_ASCII).lower()


# Each alternative: its regex, and the words it needs: groups of lower-case ASCII words, one
# word of each group at least (a word holding no letter needs no folding either).
Alternative = tuple[str, tuple[tuple[str, ...], ...]]


class Alternatives:
    """A pattern (`|` of `alternatives`, in order) searched with only the alternatives whose
    words are in the text (see above); `full` is the whole pattern."""

    def __init__(self, *alternatives: Alternative, flags: int = re.IGNORECASE) -> None:
        self.full = re.compile("|".join(source for source, _ in alternatives), flags)
        self._alternatives = alternatives
        self._flags = flags
        self._words = tuple(dict.fromkeys(w for _, needs in alternatives for g in needs for w in g))
        # By which of the words are present: the pattern of the alternatives that may match.
        self._patterns: dict[tuple[bool, ...], re.Pattern[str] | None] = {}

    def pattern(self, folded: str) -> re.Pattern[str] | None:
        """The pattern to search `folded`'s text with; None when no alternative can match."""
        if not PRECHECKS:
            return self.full
        present = tuple(map(folded.__contains__, self._words))
        try:
            return self._patterns[present]
        except KeyError:
            return self._compiled(present)

    def _compiled(self, present: tuple[bool, ...]) -> re.Pattern[str] | None:
        if len(self._patterns) >= _PATTERNS_KEPT:  # odd texts galore: the whole pattern
            return self.full
        have = {word for word, there in zip(self._words, present, strict=True) if there}
        kept = [
            source
            for source, needs in self._alternatives
            if all(any(word in have for word in group) for group in needs)
        ]
        pattern = re.compile("|".join(kept), self._flags) if kept else None
        self._patterns[present] = pattern
        return pattern

    def search(self, text: str, folded: str, meter: Meter | None) -> re.Match[str] | None:
        """`search(self.full, text, meter)`; `folded` is `fold(text)` (or holds it)."""
        pattern = self.pattern(folded)
        if pattern is None:
            return None
        if meter is not None:
            meter.regex(min(len(text), MAX_WINDOW))
        return pattern.search(text if len(text) <= MAX_WINDOW else text[:MAX_WINDOW])

    def match(self, text: str, folded: str, meter: Meter | None) -> re.Match[str] | None:
        """`match(self.full, text, meter)`; `folded` is `fold(text)` (or holds it)."""
        pattern = self.pattern(folded)
        if pattern is None:
            return None
        if meter is not None:
            meter.regex(min(len(text), MAX_WINDOW))
        return pattern.match(text if len(text) <= MAX_WINDOW else text[:MAX_WINDOW])
