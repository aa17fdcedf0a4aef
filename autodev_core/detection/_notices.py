"""The phrases of limit notices, and reading one out of a piece of text (SPEC A2-A4, A6, A7).

Detection is keyword-first: a pattern made only of literal alternatives finds candidate spots
(linear, no backtracking), then short patterns confirm the phrase and read the reset inside a
bounded window around the spot (`_bounded`). Anything that does not confirm is not a limit
(A7: an unknown wording is a failed call).

Families (real wordings, see tests/fixtures/notices/ for their sources):
- claude: `Claude AI usage limit reached|<epoch>`; `Claude usage limit reached. Your limit will
  reset at 1pm (Etc/GMT+5).`; `5-hour limit reached ∙ resets 5am`; `You've hit your (session|
  weekly|Opus) limit · resets Oct 31, 9am (Zone)`; `You're out of extra usage · resets 9pm`;
  `Usage limit reached. Try again in 2 hours.`
- codex: `You've hit your usage limit. … try again in 3 hours 2 minutes.` / `… at 3:54 AM.` /
  `… at Apr 29th, 2026 6:49 AM.` / `… Try again later.`; `Quota exceeded. Check your plan and
  billing details.`; the API's `usage_limit_reached` error (`resets_at`, `resets_in_seconds`).
- agy: `RESOURCE_EXHAUSTED (code 429): Individual quota reached. … Resets in 2h31m33s.`;
  `You have exhausted your capacity on this model. Your quota will reset after 25h20m26s.`;
  a 429 status or `RESOURCE_EXHAUSTED`/`QUOTA_EXHAUSTED` with `quotaResetTimeStamp`.
Not limits: warnings (`Approaching usage limit`, `You've used 90% of your weekly limit`), the
context window (`Context limit reached`), and capacity errors (`MODEL_CAPACITY_EXHAUSTED`,
`No capacity available`, `overloaded`, `is at capacity`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime, tzinfo

import attrs

from . import _bounded
from ._bounded import Alternatives, Meter, fold, keyword_hits, match, search, window
from ._resets import Resolver, after_seconds, parse_when, read_duration

# How far around a keyword the phrase and its reset are looked for (characters).
_BEFORE = 80
_AFTER = 600
# The reset must be written within this many characters after the phrase.
_RESET_REACH = 420
# Longest `.text` a notice carries (SPEC D: "the notice as matched (short)").
MAX_NOTICE_TEXT = 240

# Literal keywords only (lower case, found with `str.find`). Each hit is confirmed by `_PHRASE`.
_KEYWORDS = (
    "usage limit", "limit reached", "hit your", "reached your", "out of extra usage",
    "limit will reset", "limits will reset", "quota reached", "quota exceeded",
    "exceeded your current quota", "quota will reset", "quota exhausted", "exhausted your",
    "usage_limit_reached", "out of credits", "out of free messages", "usagelimitexceeded",
    "usage_limit_exceeded", "balance is too low",
)
# agy speaks Google's API: a bare 429 / RESOURCE_EXHAUSTED is its quota error (A4).
_AGY_KEYWORDS = (
    "resource_exhausted", "resourceexhausted", "quota_exhausted", "resource has been exhausted",
    "429",
)
_ALL_KEYWORDS = _KEYWORDS + _AGY_KEYWORDS

# Each pattern as its alternatives, each with words it cannot match without (lower case, one
# word of each group at least): only those that may match are tried (`Alternatives`). A few
# words per pattern, shared among its alternatives: each word is one more `in` test per search.
_PHRASE = Alternatives(
    (r"(?:hit|reached|exceeded)\s+(?:your|the)\s+(?:[\w.'-]+\s+){0,4}?limits?\b", (("limit",),)),
    (r"usage\s+limit\s+(?:reached|exceeded|has\s+been\s+reached|hit)", (("usage",), ("limit",))),
    (r"(?:[\w.'-]+\s+){0,3}?limit\s+reached", (("limit",), ("reached",))),
    (r"out\s+of\s+extra\s+usage", (("extra",),)),
    (r"limits?\s+will\s+reset", (("limit",), ("will",))),
    (r"quota\s+(?:reached|exceeded|exhausted|will\s+reset)", (("quota",),)),
    (r"exceeded\s+your\s+current\s+quota", (("quota",),)),
    (r"exhausted\s+your\s+(?:[\w.-]+\s+){0,2}?(?:capacity|quota)", (("exhausted",),)),
    (r"out\s+of\s+free\s+messages", (("free",),)),
    (r"usage_?limit_?(?:reached|exceeded)", (("usage",), ("limit",))),
    (r"out\s+of\s+credits", (("credits",),)),
    # claude with an API key whose prepaid credit ran out: the engine cannot be used until it is
    # topped up, as with a quota (codex's `Quota exceeded`), so colleagues take the turns.
    (r"credit\s+balance\s+is\s+too\s+low", (("balance",),)),
)
_AGY_PHRASE = Alternatives(
    (r"RESOURCE_EXHAUSTED", (("exhausted",),)),
    (r"ResourceExhausted", (("exhausted",),)),
    (r"QUOTA_EXHAUSTED", (("exhausted",),)),
    (r"Resource\s+has\s+been\s+exhausted", (("exhausted",),)),
    (r"(?:HTTP|status|code|error|Error:?)\W{0,12}429\b", (("429",),)),
    (r"\b429\s+Too\s+Many\s+Requests", (("429",),)),
)
# Near the phrase: a warning, the context window, or an API rate limit is not a usage limit.
# (Two patterns, only ever asked whether either matches: `_vetoed`.)
_WARNING = Alternatives(
    (r"approaching", (("approaching",),)),
    (r"\d{1,3}\s?%\s+of", (("%",),)),
    (r"\bused\s+\d", (("used",),)),
    (r"context", (("context",),)),
    # claude's throttle says so itself: `Server is temporarily limiting requests (not your usage
    # limit)` (A2: a failed call, A28).
    (r"not\s+your\s+usage\s+limit", (("not",),)),
)
_TECHNICAL_WORDS = (
    "token", "tokens", "turn", "turns", "rate", "retry", "output", "memory", "recursion", "depth",
    "size", "length", "iteration", "iterations", "step", "steps", "budget", "loop", "call",
    "calls", "character", "characters", "line", "lines", "page", "pages", "attempt", "attempts",
    "timeout", "time", "file", "upload", "attachment", "payload", "concurrency", "connection",
)
_TECHNICAL_LIMIT = re.compile(
    r"\b(?:" + "|".join(
        # As the words above, in this order (a plural as `s?` after its word).
        ("tokens?", "turns?", "rate", "retry", "output", "memory", "recursion", "depth", "size",
         "length", "iterations?", "steps?", "budget", "loop", "calls?", "characters?", "lines?",
         "pages?", "attempts?", "timeout", "time", "file", "upload", "attachment", "payload",
         "concurrency", "connection")
    ) + r")\s+limits?\b",
    re.IGNORECASE,
)


def _vetoed(text: str, folded: str, meter: Meter | None) -> bool:
    """Whether `text` (`folded` is `fold(text)`) holds a warning or a technical limit."""
    if _WARNING.search(text, folded, meter) is not None:
        return True
    if _bounded.PRECHECKS and not _technical_limit_possible(folded):
        return False
    return search(_TECHNICAL_LIMIT, text, meter) is not None


def _technical_limit_possible(folded: str) -> bool:
    """Whether some `limit` in `folded` comes after whitespace after one of the technical words
    (`_TECHNICAL_LIMIT` can match nowhere else: one `find` per `limit`, not a regex)."""
    at = folded.find("limit")
    while at != -1:
        if folded[at - 1 : at].isspace() and folded[:at].rstrip().endswith(_TECHNICAL_WORDS):
            return True
        at = folded.find("limit", at + 1)
    return False


# Capacity is not a quota: "no capacity" without a quota word is "other" (A4, A7).
_CAPACITY = Alternatives(
    (r"MODEL_CAPACITY_EXHAUSTED", (("capacity",),)),
    (r"No\s+capacity\s+available", (("capacity",),)),
    (r"is\s+at\s+capacity", (("capacity",),)),
    (r"overloaded", (("overloaded",),)),
)
_QUOTA_WORD = Alternatives(
    (r"QUOTA_EXHAUSTED", (("quota",),)),
    (r"quota\s+(?:reached|exceeded|exhausted|will\s+reset)", (("quota",),)),
    (r"usage\s+limit", (("usage",),)),
    (r"Resets\s+in", (("reset",),)),
    (r"exhausted\s+your", (("exhausted",),)),
)

# Where a reset is written, in order of appearance after the phrase: a pipe before an epoch,
# a word, or a JSON key (`delay`: a delay, read as seconds when a bare number).
_CUE = Alternatives(
    (r"\|(?=\s*\d{10})", (("|",),)),
    (r"will\s+reset", (("reset",),)),
    (r"\bresets?\b", (("reset",),)),
    (r"\btry\s+again\b", (("try",),)),
    (r"\bretry\s+(?:after|in)\b", (("retry",),)),
    (r"available\s+again", (("available",),)),
    (r"regain\s+access", (("regain",),)),
    (r"\buntil\b", (("until",),)),
    (
        r"\"?(?:quotaResetTimeStamp|resets?_?at|reset_?time)\"?\s*[:=]\s*\"?",
        (("reset",), (":", "=")),
    ),
    (
        r"(?P<delay>\"?(?:quotaResetDelay|retryDelay|retry[-_]?after(?:_?seconds)?"
        r"|resets?_?after(?:_?seconds)?|resets?_?in(?:_?seconds)?|retry_?in)\"?\s*[:=]\s*\"?)",
        (("reset", "retry"), (":", "=")),
    ),
)
# A delay written as a bare number (`"resets_in_seconds": 13872`, `Retry-After: 120`) is seconds.
_SECONDS = re.compile(r"\s*(?P<n>\d{1,9}(?:\.\d{1,9})?)(?![\d.]|\s?[a-zA-Z])")
_MAX_CUES = 8
# `Claude Opus 4 limit reached, now using Sonnet 4`: the call went on, on another model.
_SWITCHED = Alternatives((r"\W{0,4}now\s+using\b", (("using",),)))


_FLATTENED_KEY = re.compile(r"(?:message|error|detail|msg|result): ")


@attrs.frozen
class Found:
    """A notice read from one piece of text: what it said and when it resets (None: unread)."""

    text: str
    reset_at: datetime | None
    #: How the reset read was written (`LimitNotice.reset_form`); None when none was read.
    reset_form: str | None = None


def _line_around(text: str, start: int, end: int) -> str:
    """The notice as matched: its line(s) within the window, trimmed and kept short."""
    lo = text.rfind("\n", 0, start) + 1
    if start - lo > 60:
        lo = start
    hi = text.find("\n", end)
    if hi == -1:
        hi = len(text)
    line = " ".join(text[lo:hi].split())
    key = _FLATTENED_KEY.match(line) if ": " in line else None  # "message: …" from an event
    return line[key.end() if key else 0 :][:MAX_NOTICE_TEXT]


#: docs/sharing.md "Clocks": what in a reset as written (lower-cased) names a day (a date, a
#: weekday, tomorrow), an epoch, or a clock time; a reset with none of them is a duration.
_FORM = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2}|\b(?:tomorrow|jan|feb|fev|mar|apr|abr|may|mai|jun|jul|aug|ago"
    r"|sep|set|oct|out|nov|dec|dez|dic|ene|mon|tue|wed|thu|fri|sat|sun))"
    r"|(?P<epoch>(?<!\d)(?:\d{13}|\d{10})(?!\d))"
    r"|(?P<clock>\d:\d{2}|\d\s?[ap]\.?\s?m\b)")


def _form_of(written: str) -> str:
    """How a reset `parse_when` read was written (`LimitNotice.reset_form`): `date`, else
    `epoch`, else `clock`, else `relative` (a duration)."""
    found = {m.lastgroup for m in _FORM.finditer(written.lower())}
    for form in ("date", "epoch", "clock"):
        if form in found:
            return form
    return "relative"


def _readers(
    win: str, start: int, meter: Meter | None
) -> Iterator[tuple[Resolver, int, str | None]]:
    """The resets written after `start` in `win`, in order, each with where it ends and what
    tells how it was written: None for a delay (`relative`), else the text read (`_form_of`,
    worked out only for the reset read); the first that gives a reset at an instant is the
    notice's (`_read_reset`)."""
    pos = start
    reach = min(len(win), start + _RESET_REACH)
    paragraph = win.find("\n\n", start, reach)  # a reset belongs to its own paragraph
    if paragraph != -1:
        reach = paragraph
    folded = fold(win)
    for _ in range(_MAX_CUES):
        cue = _CUE.search(win[pos:reach], folded[pos:reach], meter)
        if cue is None:
            break
        cue_end = pos + cue.end()
        if cue.lastgroup == "delay":
            rest = win[cue_end:reach]
            seconds = match(_SECONDS, rest, meter)
            written = (float(seconds.group("n")), seconds.end()) if seconds else (
                read_duration(rest, meter)
            )
            if written is not None:
                yield after_seconds(written[0]), cue_end + written[1], None
        else:
            read = parse_when(win[cue_end:], meter)
            if read is not None and read[0] is not None:
                yield read[0], cue_end + read[1], win[cue_end:cue_end + read[1]]
        pos = max(cue_end, pos + 1)


def _read_reset(
    win: str, start: int, now: datetime, local_tz: tzinfo, meter: Meter | None
) -> tuple[datetime | None, int, str | None]:
    """The first reset written after `start` in `win` (where it ends, how it was written),
    else (None, start, None)."""
    for resolve, end, written in _readers(win, start, meter):
        reset = resolve(now, local_tz)
        if reset is not None:
            return reset, end, "relative" if written is None else _form_of(written)
    return None, start, None


@attrs.frozen
class Candidate:
    """A notice confirmed in a window of text; its reset is read at an instant (`found`).

    Everything up to the reset (the keyword, the phrase, the vetoes) is the same whenever the
    text is read: a caller that reads the same text at many instants (`simulate`) confirms it
    once and resolves only the reset at each (SPEC D: classified exactly as real output is).
    """

    win: str
    start: int
    end: int

    def found(self, now: datetime, local_tz: tzinfo, meter: Meter | None = None) -> Found:
        reset, reset_end, form = _read_reset(self.win, self.start, now, local_tz, meter)
        return Found(
            text=_line_around(self.win, self.start, max(self.end, reset_end)), reset_at=reset,
            reset_form=form,
        )

    def prepared(self) -> PreparedCandidate:
        """The same notice with its resets parsed now, to be resolved at many instants."""
        win, start, phrase_end = self.win, self.start, self.end
        text = _line_around(win, start, phrase_end)
        readers = []
        for resolve, end, written in _readers(win, start, None):
            # A reset on the phrase's line gives the phrase's text (`_line_around` ends lines).
            same = end <= phrase_end or win.find("\n", phrase_end, end) == -1
            readers.append((resolve, text if same else _line_around(win, start, end),
                            "relative" if written is None else _form_of(written)))
        return PreparedCandidate(readers=tuple(readers), text=text)


@attrs.frozen
class PreparedCandidate:
    """A `Candidate` whose resets are parsed: each with the notice's text when it is the one
    read. `found` gives what `Candidate.found` gives, at any instant, with no regex."""

    readers: tuple[tuple[Resolver, str, str], ...]
    #: The notice's text when no reset is readable at the instant.
    text: str

    def found(self, now: datetime, local_tz: tzinfo, meter: Meter | None = None) -> Found:
        reset, text, form = self.read(now, local_tz)
        return Found(text=text, reset_at=reset, reset_form=form)

    def read(self, now: datetime, local_tz: tzinfo) -> tuple[datetime | None, str, str | None]:
        """What `found` holds (the reset, the text, how the reset was written), without
        building it."""
        for resolve, text, form in self.readers:
            reset = resolve(now, local_tz)
            if reset is not None:
                return reset, text, form
        return None, self.text, None


def candidates(text: str, provider: str, meter: Meter | None = None) -> Iterator[Candidate]:
    """The notices in `text`, in order, each distinct window once (no reset read yet)."""
    text = text.replace("\u2019", "'")  # both apostrophes occur (A3); same length
    keywords = _ALL_KEYWORDS if provider == "agy" else _KEYWORDS
    # A CLI retrying prints the same notice again and again: a window already confirmed (or
    # refused) gives the same answer, as `_confirm` depends on nothing else. Read it once.
    seen: set[tuple[str, int, bool]] = set()
    # Two keywords of one phrase (`hit your usage limit`) confirm the same notice: a notice
    # already given gives nothing new (the first with a reset, else the first, is read).
    given: set[Candidate] = set()
    hits = keyword_hits(keywords, text, meter)
    known = _Known() if len(hits) > 1 and _bounded.PRECHECKS else None
    for position, keyword in hits:
        win, off = window(text, position, before=_BEFORE, after=_AFTER)
        agy_only = keyword in _AGY_KEYWORDS
        if (win, off, agy_only) in seen:
            continue
        seen.add((win, off, agy_only))
        candidate = _confirm(win, off, agy_only, meter, known)
        if candidate is not None:
            if candidate in given and _bounded.PRECHECKS:
                continue
            given.add(candidate)
            yield candidate


def pick(
    found: Iterable[Candidate | PreparedCandidate],
    now: datetime,
    local_tz: tzinfo,
    meter: Meter | None = None,
) -> Found | None:
    """The first notice with a readable reset at `now`, else the first notice."""
    first: Found | None = None
    for candidate in found:
        notice = candidate.found(now, local_tz, meter)
        if notice.reset_at is not None:
            return notice
        if first is None:
            first = notice
    return first


def _confirm(
    win: str, off: int, agy_only: bool, meter: Meter | None, known: _Known | None = None
) -> Candidate | None:
    """The notice whose phrase covers the keyword at `off` in `win`, if it confirms. `known`
    keeps the searches and verdicts of one text's windows: each is a function of its own
    arguments, so a second keyword of the same phrase finds them done."""
    # The phrase must cover the keyword: look a little before it (for `5-hour limit reached`).
    pattern = _AGY_PHRASE if agy_only else _PHRASE
    folded = fold(win)
    lo = max(0, off - 48)
    phrase = None
    for _ in range(4):  # the first phrase that covers the keyword
        hi = off + 120
        if known is None:
            phrase = pattern.search(win[lo:hi], folded[lo:hi], meter)
        else:
            key = (win, agy_only, lo, min(hi, len(win)))
            if key in known.phrases:
                phrase = known.phrases[key]
            else:
                phrase = known.phrases[key] = pattern.search(win[lo:hi], folded[lo:hi], meter)
        if phrase is None or lo + phrase.end() > off:
            break
        lo += max(phrase.end(), 1)
        phrase = None
    if phrase is None:
        return None
    start, end = lo + phrase.start(), lo + phrase.end()
    if known is None:
        return _vetted(win, folded, start, end, agy_only, meter)
    verdict = (win, agy_only, start, end)
    if verdict not in known.verdicts:
        known.verdicts[verdict] = _vetted(win, folded, start, end, agy_only, meter)
    return known.verdicts[verdict]


@attrs.define
class _Known:
    """What `_confirm` found in one text's windows (see there)."""

    phrases: dict[tuple[str, bool, int, int], re.Match[str] | None] = attrs.Factory(dict)
    verdicts: dict[tuple[str, bool, int, int], Candidate | None] = attrs.Factory(dict)


def _vetted(
    win: str, folded: str, start: int, end: int, agy_only: bool, meter: Meter | None
) -> Candidate | None:
    """The phrase at `start:end` of `win` as a notice, unless the words around it say it is not
    one."""
    # Warnings are told apart by the words just before the phrase, on its own line.
    veto_from = max(0, start - 24, win.rfind("\n", 0, start) + 1)
    if _vetoed(win[veto_from:end], folded[veto_from:end], meter) or _SWITCHED.match(
        win[end:], folded[end:], meter
    ):
        return None
    # A bare 429 / RESOURCE_EXHAUSTED next to a capacity error is the capacity error.
    if (
        agy_only
        and _CAPACITY.search(win, folded, meter)
        and not _QUOTA_WORD.search(win, folded, meter)
    ):
        return None
    return Candidate(win=win, start=start, end=end)
