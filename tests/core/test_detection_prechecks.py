"""The shortcuts for short texts change no answer (SPEC D: classified exactly as real output is).

Before an IGNORECASE pattern runs, the detectors leave out those of its alternatives whose
literal words are not in the text (`_bounded.Alternatives`); short texts are searched for
keywords one keyword at a time; a short stdout is cut whole at once. With
`_bounded.PRECHECKS = False` all of that is skipped and every pattern runs whole, as before:
the two must agree on every text, here texts built from the notices' own words written in
every case, with the non-ASCII letters an IGNORECASE pattern reads as ASCII ones (`İ`, `ı`,
`ſ`, KELVIN SIGN) in their place.
"""

from __future__ import annotations

import json
import re
import string
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import pytest
from helpers.corpus import notice_cases
from hypothesis import given, settings
from hypothesis import strategies as st

from autodev_core.detection import _bounded, _failures, _notices, _resets
from autodev_core.detection.reader import (
    classify_output,
    detect_limit,
    detect_login_error,
    detect_network_error,
    prepare_classification,
)

T = TypeVar("T")
PROVIDERS = ["claude", "codex", "agy"]
NOW = datetime(2026, 12, 2, 7, 45, tzinfo=UTC)
# More examples than the profile's: each is cheap, and a wrong pre-check shows only on the
# texts that hold the alternative it wrongly leaves out.
MANY = max(settings().max_examples, 300)


def _whole(run: Callable[[], T]) -> T:
    """`run()` with every pattern searched whole and no shortcut: the reference."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bounded, "PRECHECKS", False)
        return run()


# --- folding: what an IGNORECASE pattern takes for an ASCII letter --------------------------


def test_D_fold_writes_every_letter_ignorecase_reads_as_ascii_in_ascii() -> None:
    """Every code point an IGNORECASE pattern matches to an ASCII letter is folded to that
    letter, and folding keeps each character in its place (one character each)."""
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    folded = _bounded.fold(every)
    assert len(folded) == len(every)
    for letter in string.ascii_lowercase:
        for found in re.finditer(f"[{letter}]|{letter}", every, re.IGNORECASE):
            assert folded[found.start()] == letter, (hex(ord(found.group())), letter)
    # Those the ASCII-only view would miss are there, each folded.
    for char, letter in (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k")):
        assert re.fullmatch(letter, char, re.IGNORECASE)
        assert _bounded.fold("x" + char + "y") == "x" + letter + "y"


# --- texts built from the notices' words --------------------------------------------------

# Phrases of every provider's notices, their resets, zones, JSON keys, and the words that veto
# or confirm one (warnings, the context window, capacity, a model switch).
WORDS = [
    "You've hit your limit", "You’ve hit your usage limit", "hit the weekly Opus limit",
    "reached your limit", "exceeded the limit", "exceeded your usage limit",
    "reached the daily limit", "Claude AI usage limit reached",
    "usage limit exceeded", "usage limit has been reached", "usage limit hit",
    "5-hour limit reached", "Opus 4 limit reached", "limit reached", "Your limit will reset",
    "limits will reset", "You're out of extra usage", "out of credits",
    "out of free messages", "Quota exceeded", "quota reached", "quota exhausted",
    "quota will reset", "exceeded your current quota",
    "You have exhausted your capacity on this model", "exhausted your quota",
    "usage_limit_reached", "usageLimitExceeded", "usage_limit_exceeded",
    "RESOURCE_EXHAUSTED", "ResourceExhausted", "QUOTA_EXHAUSTED",
    "Resource has been exhausted", "code 429", "HTTP 429", "status: 429", "Error: 429",
    "429 Too Many Requests", "Individual quota reached",
    "MODEL_CAPACITY_EXHAUSTED", "No capacity available", "is at capacity", "overloaded",
    "Approaching usage limit", "You've used 90% of your weekly limit", "used 5",
    "Context limit reached", "rate limit", "token limits", "retry limit", "time limit",
    "connection limit", "tool call limit", "output\tlimit", "Turns  Limits",
    "iterations\u2003limit", "timeout limit", "pages limit", "now using Sonnet 4", ", now using",
    "resets", "reset", "will reset", "try again", "Try again later", "retry after",
    "retry in", "available again", "regain access", "until", "Resets in", "|",
    "|1776938400", "| 1776938400", "5pm", "3:54 AM", "2:30pm", "Oct 31, 9am",
    "Apr 29th, 2026 6:49 AM", "tomorrow at 4pm", "2026-04-29T06:49:00Z",
    "10 de jul. de 2026, 11:52", "in 3 hours 2 minutes", "in 2h31m33s", "after 25h20m26s",
    "in about an hour", "less than a minute", "in 45 seconds",
    "(Europe/Lisbon)", "(Etc/GMT+5)", "(America/New_York)", "PST", "UTC+05:30",
    '"quotaResetTimeStamp": "2026-04-29T06:49:00Z"', '"resets_at": 1776938400',
    '"resets_in_seconds": 13872', "Retry-After: 120", '"retryDelay": "30s"',
    "quotaResetDelay: 2h31m33s", "reset_time=1776938400", "retry_in: 60", "retry_after=120",
    "resets_in=3600", "retryDelay = 2h",
    "Not logged in · Please run /login", "OAuth token has expired", "authentication_error",
    "getaddrinfo ENOTFOUND api.example.com", "ECONNREFUSED", "socket hang up",
    " ", " ", "  ", "\t", "\n", "\n\n", ".", ",", "·", "∙", ":", "-", "'", "’", "x", "ok",
    "Upgrade to Pro or", "Individual", "of", "in", "at", "your", "the", "is",
]
# Technical limits are no usage limits (docs/limits.md): each such word before `limit`.
TECHNICAL = [
    "token", "tokens", "turn", "turns", "rate", "retry", "output", "memory", "recursion", "depth",
    "size", "length", "iteration", "iterations", "step", "steps", "budget", "loop", "call",
    "calls", "character", "characters", "line", "lines", "page", "pages", "attempt", "attempts",
    "timeout", "time", "file", "upload", "attachment", "payload", "concurrency", "connection",
]
SPACES = [" ", "  ", "\t", "\u00a0", "\n"]
WORDS += [
    f"{word}{SPACES[n % len(SPACES)]}{['limit', 'limits', 'LIMIT'][n % 3]}"
    for n, word in enumerate(TECHNICAL)
]
# Non-ASCII letters an IGNORECASE pattern takes for ASCII ones, and others it does not.
LOOKALIKES = {"i": ["\u0130", "\u0131"], "I": ["\u0130", "\u0131"], "s": ["\u017f"],
              "S": ["\u017f"], "k": ["\u212a"], "K": ["\u212a"]}


def _case(text: str, how: int) -> str:
    return [text, text.upper(), text.lower(), text.swapcase(), text.title()][how]


@st.composite
def worded(draw: st.DrawFn) -> str:
    """Words of the notices, in any case, some letters written as their non-ASCII lookalikes."""
    parts = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12))
    joiners = draw(st.lists(st.sampled_from(["", " ", "  ", ". ", "\n", " · "]),
                            min_size=len(parts), max_size=len(parts)))
    text = "".join(_case(p, draw(st.integers(0, 4))) + j for p, j in zip(parts, joiners,
                                                                           strict=True))
    swaps = draw(st.integers(0, 3))
    chars = list(text)
    for _ in range(swaps):
        at = draw(st.integers(0, len(chars) - 1))
        if chars[at] in LOOKALIKES:
            chars[at] = draw(st.sampled_from(LOOKALIKES[chars[at]]))
    return "".join(chars)


def _all_alternatives() -> Iterator[tuple[str, _bounded.Alternatives]]:
    for module in (_notices, _failures, _resets):
        for name, value in vars(module).items():
            if isinstance(value, _bounded.Alternatives):
                yield f"{module.__name__}.{name}", value


ALTERNATIVES = sorted(_all_alternatives())


def test_D_the_patterns_with_pre_checks_are_those_of_the_notice_reader() -> None:
    names = {name.rsplit(".", 1)[1] for name, _ in ALTERNATIVES}
    assert {"_PHRASE", "_AGY_PHRASE", "_WARNING", "_CUE", "_CAPACITY", "_QUOTA_WORD"} <= names


@settings(max_examples=MANY)
@given(text=worded(), cut=st.tuples(st.integers(0, 200), st.integers(0, 400)))
def test_D_a_pattern_with_pre_checks_finds_what_the_whole_pattern_finds(
    text: str, cut: tuple[int, int]
) -> None:
    for piece in (text, text[cut[0] : cut[0] + cut[1]]):
        folded = _bounded.fold(piece)
        for name, alternatives in ALTERNATIVES:
            for fast, whole in ((alternatives.search, alternatives.full.search),
                                (alternatives.match, alternatives.full.match)):
                got, want = fast(piece, folded, None), whole(piece)
                assert (got and (got.span(), got.lastgroup)) == (
                    want and (want.span(), want.lastgroup)
                ), (name, piece)
        # A warning or a technical limit near a phrase (`_vetoed`: a word test before a regex).
        assert _notices._vetoed(piece, folded, None) == _whole(
            partial(_notices._vetoed, piece, folded, None)
        ), piece


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, str, str]:
    """(provider, stdout, stderr) holding worded text, plain or in a CLI's event."""
    provider = draw(st.sampled_from(PROVIDERS))
    text = draw(worded())
    shape = draw(st.integers(0, 4))
    if shape == 1:
        text = json.dumps({"type": "result", "is_error": True, "result": text})
    elif shape == 2:
        text = json.dumps({"type": "error", "message": text})
    elif shape == 3:
        text = "AGY_ERROR: " + json.dumps({"error": {"code": 429, "message": text}})
    return (provider, text, "") if draw(st.booleans()) else (provider, "", text)


def _answers(provider: str, stdout: str, stderr: str, tz: ZoneInfo) -> list[Any]:
    kwargs: dict[str, Any] = {"stdout": stdout, "stderr": stderr, "exit_code": 1}
    prepared = prepare_classification(provider, **kwargs)
    return [
        classify_output(provider, now=NOW, local_tz=tz, **kwargs),
        prepared.at(NOW, tz),
        detect_limit(provider, now=NOW, local_tz=tz, **kwargs),
        detect_network_error(provider, **kwargs),
        detect_login_error(provider, stdout=stdout, stderr=stderr),
    ]


@settings(max_examples=MANY)
@given(output=outputs(), tz=st.sampled_from(["UTC", "Europe/Lisbon", "Asia/Tokyo"]))
def test_D_classifying_with_pre_checks_changes_no_answer(
    output: tuple[str, str, str], tz: str
) -> None:
    provider, stdout, stderr = output
    zone = ZoneInfo(tz)
    assert _answers(provider, stdout, stderr, zone) == _whole(
        lambda: _answers(provider, stdout, stderr, zone)
    )


@pytest.mark.parametrize("case", notice_cases())
def test_D_the_corpus_classifies_alike_with_and_without_pre_checks(case: dict[str, Any]) -> None:
    provider, tz = case["provider"], ZoneInfo(case["local_tz"])
    stdout, stderr = case.get("stdout") or "", case.get("stderr") or ""
    for out, err in ((stdout, stderr), (_case(stdout, 1), _case(stderr, 1)),
                     (stdout.replace("i", "\u0131"), stderr.replace("s", "\u017f"))):
        assert _answers(provider, out, err, tz) == _whole(partial(_answers, provider, out, err, tz))


@pytest.mark.parametrize(
    ("provider", "stdout", "stderr"),
    [
        # The notices of the simulation's storm (bench/bench_simulation.py), as they come.
        ("claude", "You've hit your limit · resets 3pm (Europe/Lisbon)", ""),
        ("codex", "", "You've hit your usage limit. Upgrade to Pro or try again in 2 hours 2 "
                      "minutes."),
        ("agy", "", "Individual quota reached. Resets in 2h31m33s."),
        # Letters IGNORECASE reads as ASCII ones, where a pre-check needs them.
        ("claude", "You've h\u0130t your l\u0131m\u0130t · re\u017fets 3pm", ""),
        ("codex", "", "Quota exceeded. Try again \u0130n 2 hour\u017f."),
        ("agy", "", "RE\u017fOURCE_EXHAU\u017fTED: quota will re\u017fet. Re\u017fets in 2h."),
        ("claude", "Usage limit reached. Try again \u0131n 3 hours. \u212aeep going", ""),
        ("agy", "", "MODEL_CAPACITY_EXHAUSTED (code 429). \u0130s at capac\u0131ty"),
        ("claude", "You've used 90% of your l\u0131m\u0131t · resets 5pm", ""),
        ("codex", "", "You've hit your usage limit. {\"retry_\u0131n\": 60}"),
    ],
)
def test_D_the_storms_notices_and_lookalike_letters_classify_alike(
    provider: str, stdout: str, stderr: str
) -> None:
    zone = ZoneInfo("Europe/Lisbon")
    assert _answers(provider, stdout, stderr, zone) == _whole(
        lambda: _answers(provider, stdout, stderr, zone)
    )


# --- a reset written with letters IGNORECASE reads as ASCII ones ---------------------------


@pytest.mark.parametrize(
    ("provider", "written", "ascii"),
    [
        ("agy", "Individual quota reached. Resets in 2\u017f.", "Individual quota reached. "
                                                                "Resets in 2s."),
        ("codex", "Usage limit reached. Try again in a \u017fecond.",
         "Usage limit reached. Try again in a second."),
        ("claude", "You've hit your limit · resets \u017fep 3, 5pm", "You've hit your limit · "
                                                                    "resets sep 3, 5pm"),
        ("claude", "You've hit your limit · resets fr\u0131 5pm", "You've hit your limit · "
                                                                 "resets fri 5pm"),
        ("codex", "Usage limit reached. Try again \u0131n 3 hours.",
         "Usage limit reached. Try again in 3 hours."),
        ("codex", "Usage limit reached. Try again in 3 m\u0131ns.",
         "Usage limit reached. Try again in 3 mins."),
        ("codex", "Quota exceeded. Try again at 10 de d\u0131c. de 2026, 11:52.",
         "Quota exceeded. Try again at 10 de dic. de 2026, 11:52."),
    ],
)
def test_A6_a_reset_written_with_lookalike_letters_reads_as_written_in_ascii(
    provider: str, written: str, ascii: str
) -> None:
    """The reset's patterns read `ſ` as `s` and `ı` as `i` (IGNORECASE): so does the reading of
    the words they matched, rather than raising (SPEC D: any text in, a value out)."""
    zone = ZoneInfo("Europe/Lisbon")
    got = classify_output(provider, stderr=written, exit_code=1, now=NOW, local_tz=zone)
    want = classify_output(provider, stderr=ascii, exit_code=1, now=NOW, local_tz=zone)
    assert got.kind == want.kind == "limit"
    assert got.limit is not None and want.limit is not None
    assert got.limit.reset_at == want.limit.reset_at is not None


@pytest.mark.parametrize("word", TECHNICAL)
def test_D_a_technical_limit_vetoes_a_phrase_with_pre_checks_as_without(word: str) -> None:
    for text in (f"{word} limit reached", f"Your {word.upper()}\t LIMITS reached",
                 f"{word.title()}\u2003limit", f"x{word} limit", f"{word}limit",
                 f"{word} \u0131imit", f"{word.replace('s', chr(0x17F))} limit"):
        folded = _bounded.fold(text)
        assert _notices._vetoed(text, folded, None) == _whole(
            partial(_notices._vetoed, text, folded, None)
        ), text
