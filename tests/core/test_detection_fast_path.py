"""Detection reads only the lines that can matter, and finds what reading everything finds.

`detect_limit`, `classify_output`, `detect_network_error` and `detect_login_error` look for
their keywords on the raw bytes first and decode only the stdout lines holding one (issue 13).
Here a plain reader, written out in this module, cuts the whole output the long way (every
line, `json.loads`, SPEC A5's pieces) and hands it to the same precedence; the two must agree
on generated output and on every case of the notice corpus (tests/fixtures/notices).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from helpers.corpus import notice_cases
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.detection import _sieve
from autodev_core.detection._bounded import keyword_hits
from autodev_core.detection._streams import (
    Output,
    Piece,
    RateLimitEvent,
    _event_pieces,
    _split_codex_stderr,
    strip_ansi,
)
from autodev_core.detection.classification import Classification
from autodev_core.detection.reader import (
    _limit,
    _login,
    _network,
    _readings,
    _usage,
    classify_output,
    detect_limit,
    detect_login_error,
    detect_network_error,
    prepare_classification,
)

PROVIDERS = ["claude", "codex", "agy"]
NOW = datetime(2026, 4, 23, 9, 30, tzinfo=UTC)


# --- the plain reader ----------------------------------------------------------------------


def _events(line: str) -> list[dict[str, Any]] | None:
    """The structured events on a stripped stdout line, or None for free text."""
    if not line or line[0] not in "{[":
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    found = [
        v
        for v in (value if isinstance(value, list) else [value])
        if isinstance(v, dict)
        and (
            isinstance(v.get("type"), str)
            or isinstance(v.get("msg"), dict)
            or "error" in v
            or (isinstance(v.get("method"), str) and isinstance(v.get("params"), dict))
        )
    ]
    return found or None


def _flat(value: Any) -> str:
    """An event as the CLI's words: its leaves as `key: value` lines."""
    lines: list[str] = []

    def walk(v: Any, key: str, depth: int) -> None:
        if len(lines) >= 400 or depth > 8:
            return
        if isinstance(v, dict):
            for k, inner in v.items():
                walk(inner, str(k), depth + 1)
        elif isinstance(v, list):
            for inner in v:
                walk(inner, key, depth + 1)
        elif v is not None:
            lines.append(f"{key}: {v}" if key else str(v))

    walk(value, "", 0)
    return "\n".join(lines)


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def plain_cut(stdout: str, stderr: str, provider: str) -> Output:
    """Every line read, every JSON line decoded: what the output says, in the order written."""
    pieces: list[Piece] = []
    limits: list[RateLimitEvent] = []
    succeeded = False
    free: list[str] = []
    for raw in strip_ansi(stdout).splitlines():
        line = raw.strip()
        # agy's own error line: only in agy's output, only before a JSON object (A4, A5).
        at = line.find("AGY_ERROR:", 0, 50) if provider in ("agy", "") else -1
        payload = line[at + len("AGY_ERROR:") :].strip() if at != -1 else ""
        if at != -1 and _is_object(payload):
            parsed = _events(payload)
            text = payload if parsed is None else payload + "\n" + _flat(parsed)
            pieces.append(Piece(text=text, origin="cli", where="event"))
            continue
        events = _events(line)
        if events is not None and provider not in ("claude", ""):
            # claude's `rate_limit_event` in another CLI's output is its model's text (A2, A5).
            events = [e for e in events if e.get("type") != "rate_limit_event"] or None
        if events is None:
            free.append(raw)
            continue
        for event in events:
            for part in _event_pieces(event):
                if part is True:
                    succeeded = True
                elif isinstance(part, RateLimitEvent):
                    limits.append(part)
                elif isinstance(part, Piece):
                    pieces.append(part)
    free_text = "\n".join(free).strip()
    if free_text:
        pieces.append(Piece(text=free_text, origin="model", where="stdout"))
    err = strip_ansi(stderr)
    if provider == "codex":
        err, said = _split_codex_stderr(err)
        pieces.extend(Piece(text=text, origin="model", where="message") for text in said)
    if err.strip():
        pieces.append(Piece(text=err, origin="cli", where="stderr"))
    return Output(pieces=tuple(pieces), rate_limits=tuple(limits), succeeded=succeeded)


def plain_classify(
    provider: str, stdout: str, stderr: str, exit_code: int | None, local_tz: Any
) -> Classification:
    output = plain_cut(stdout, stderr, provider)
    limit = _limit(provider, output, NOW, local_tz, None)
    if limit is not None:
        return Classification(kind="limit", limit=limit, text=limit.text)
    login = _login(provider, output, None)
    if login is not None:
        return Classification(kind="login", text=login)
    network = _network(output, exit_code, None)
    if network is not None:
        return Classification(kind="network", text=network)
    # A healthy call's usage readings (the nearest, and every window it names), from the
    # structured events the plain cut kept (docs/limits.md).
    return Classification(kind="other", usage=_usage(provider, output),
                          readings=_readings(provider, output))


def _agree(provider: str, stdout: str, stderr: str, exit_code: int | None, tz: Any) -> None:
    output = plain_cut(stdout, stderr, provider)
    kwargs: dict[str, Any] = {"stdout": stdout, "stderr": stderr, "exit_code": exit_code}
    expected = plain_classify(provider, stdout, stderr, exit_code, tz)
    assert classify_output(provider, now=NOW, local_tz=tz, **kwargs) == expected
    assert detect_limit(provider, now=NOW, local_tz=tz, **kwargs) == _limit(
        provider, output, NOW, tz, None
    )
    assert detect_network_error(provider, **kwargs) == _network(output, exit_code, None)
    assert detect_login_error(provider, stdout=stdout, stderr=stderr) == _login(
        provider, output, None
    )


# --- generated output ----------------------------------------------------------------------

NOTICES = [
    "You've hit your limit · resets 2:30pm (America/New_York)",
    "Claude AI usage limit reached|1776938400",
    "5-hour limit reached ∙ resets 5am",
    "Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).",
    "You’ve hit your usage limit. Try again in 3 hours 2 minutes.",
    "You're out of extra usage · resets 9pm",
    "RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 2h31m33s.",
    "Quota exceeded. Check your plan and billing details.",
    "Not logged in · Please run /login",
    "getaddrinfo ENOTFOUND api.anthropic.com",
    "Reconnecting... waiting for network",
    "dial tcp: lookup api.example.com: no such host",
    "i/o timeout",
    "Approaching usage limit",
    "Context limit reached",
]
NOISE = ["working on it", "tests pass", "E   assert 3 == 4", "done", "", "   ", "ok 429"]


def _mangle(text: str, how: int) -> str:
    """The same words written another way: upper case, an escaped letter, a KELVIN SIGN."""
    if how == 1:
        return text.upper()
    if how == 2:
        return text.swapcase()
    if how == 3:
        return text.replace("k", "\u212a").replace("K", "\u212a")
    return text


texts = st.builds(
    _mangle,
    st.one_of(st.sampled_from(NOTICES), st.sampled_from(NOISE), st.text(max_size=30)),
    st.integers(0, 3),
) | st.builds(lambda a, b: a + " " + b, st.sampled_from(NOTICES), st.sampled_from(NOISE))


def _escaped(encoded: str, letter: str) -> str:
    """The same JSON with every `letter` written as a `\\u` escape (any encoder may). The
    letters are in no JSON literal (`true`, `false`, `null`) and no hex digit."""
    return encoded.replace(letter, f"\\u{ord(letter):04x}")


@st.composite
def event_lines(draw: st.DrawFn) -> str:
    text = draw(texts)
    shape = draw(st.integers(0, 12))
    value: Any
    if shape == 0:
        value = {"type": "result", "subtype": draw(st.sampled_from(["success", "error"])),
                 "is_error": draw(st.booleans()), "result": text}
    elif shape == 1:
        value = {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
    elif shape == 2:
        value = {"type": "rate_limit_event", "rate_limit_info": {
            "status": draw(st.sampled_from(["rejected", "allowed", "allowed_warning"])),
            "resetsAt": draw(st.none() | st.integers(1_700_000_000, 1_900_000_000))}}
    elif shape == 3:
        value = {"type": "system", "subtype": "api_retry", "error": text}
    elif shape == 4:
        value = {"type": draw(st.sampled_from(["error", "turn.failed"])), "message": text}
    elif shape == 5:
        value = {"type": draw(st.sampled_from(["turn.completed", "item.completed"])),
                 "item": {"type": draw(st.sampled_from(["agent_message", "error"])),
                          "text": text, "message": text}}
    elif shape == 6:
        value = {"msg": {"type": draw(st.sampled_from(["error", "agent_message",
                                                      "task_complete"])), "message": text}}
    elif shape == 7:
        value = {"method": draw(st.sampled_from(["error", "turn/completed"])),
                 "params": {"turn": {"status": draw(st.sampled_from(["failed", "completed"])),
                                     "error": {"message": text}}}}
    elif shape == 8:
        value = {"type": "user", "message": {"content": [{"type": "tool_result",
                                                           "content": text}]}}
    elif shape == 9:
        value = [{"error": {"message": text, "code": draw(st.sampled_from([429, 4.29e2]))}}]
    elif shape == 10:
        return "AGY_ERROR: " + json.dumps({"error": {"status": text, "code": 429}})
    elif shape == 11:
        return text  # free text
    else:
        return "\x1b[31m" + text + "\x1b[0m"
    encoded = json.dumps(value, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 3)) == 0:
        encoded = _escaped(encoded, draw(st.sampled_from("imqoyIMQOY")))
    if draw(st.integers(0, 6)) == 0:
        encoded = encoded.replace("/", "\\/")
    return encoded


breaks = st.sampled_from(["\n", "\n", "\n", "\r\n", "\r", "\x0b", "\x85", "\u2028", "\x1e"])


@st.composite
def outputs(draw: st.DrawFn) -> str:
    lines = draw(st.lists(event_lines(), max_size=8))
    padding = draw(st.sampled_from(["", "x" * 310, "{" * 5]))
    if padding:
        lines.insert(draw(st.integers(0, len(lines))), padding)
    out = ""
    for line in lines:
        out += line + draw(breaks)
    return out


@given(
    provider=st.sampled_from(PROVIDERS),
    stdout=outputs(),
    stderr=st.one_of(st.just(""), texts, outputs()),
    exit_code=st.none() | st.sampled_from([0, 1, 3]),
    tz=st.sampled_from(["UTC", "Europe/Lisbon", "America/New_York"]).map(ZoneInfo),
)
def test_D_reading_only_the_lines_that_can_matter_finds_what_reading_all_finds(
    provider: str, stdout: str, stderr: str, exit_code: int | None, tz: ZoneInfo
) -> None:
    _agree(provider, stdout, stderr, exit_code, tz)


@given(provider=st.sampled_from(PROVIDERS), stdout=st.text(max_size=400),
       stderr=st.text(max_size=200), exit_code=st.none() | st.integers(-2, 3))
def test_D_the_fast_reader_agrees_on_arbitrary_text(
    provider: str, stdout: str, stderr: str, exit_code: int | None
) -> None:
    _agree(provider, stdout, stderr, exit_code, UTC)


# Long outputs go through a sieve first (blocks of the text with the letters no keyword needs
# dropped, see `_sieve.latin1_spans`); its blocks are made tiny here, so that they start and
# end inside keywords, escapes and line breaks of these short outputs.


@given(
    block=st.integers(1, 48),
    provider=st.sampled_from(PROVIDERS),
    stdout=outputs(),
    stderr=st.one_of(st.just(""), texts, outputs()),
    exit_code=st.none() | st.sampled_from([0, 1, 3]),
)
def test_D_the_sieve_over_blocks_of_any_size_finds_what_reading_all_finds(
    block: int, provider: str, stdout: str, stderr: str, exit_code: int | None
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sieve, "_BLOCK", block)
        _agree(provider, stdout, stderr, exit_code, UTC)


@given(
    block=st.integers(1, 48),
    filler=st.sampled_from(["E   assert 3 == 4", "a" * 60, "Your Quota", "l i m i t", "\\u00"]),
    repeat=st.integers(0, 60),
    at=st.integers(0, 60),
    notice=st.sampled_from(NOTICES).map(lambda n: n.swapcase() if "h" in n else n),
    shape=st.sampled_from(["{}", '{{"type":"result","result":{}}}', "AGY_ERROR: {}"]),
    newline=st.sampled_from(["\n", "\r\n", "\r", "\x85"]),
)
def test_D_the_sieve_finds_one_notice_among_many_lines(
    block: int, filler: str, repeat: int, at: int, notice: str, shape: str, newline: str
) -> None:
    line = json.dumps({"type": "user", "message": {"content": filler}})
    lines = [line] * repeat
    lines.insert(min(at, repeat), shape.format(json.dumps(notice)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sieve, "_BLOCK", block)
        for provider in PROVIDERS:
            _agree(provider, newline.join(lines), "", 1, UTC)


@pytest.mark.parametrize("case", notice_cases())
def test_D_the_fast_reader_agrees_on_the_notice_corpus(case: dict[str, Any]) -> None:
    stdout, stderr = case.get("stdout") or "", case.get("stderr") or ""
    tz = ZoneInfo(case["local_tz"])
    _agree(case["provider"], stdout, stderr, case.get("exit"), tz)
    # And inside a long stream-json transcript, whose other lines hold no keyword.
    filler = json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "content": "E   assert 3 == 4\n" * 20}]}}) + "\n"
    _agree(case["provider"], filler * 30 + stdout + "\n" + filler * 3, stderr, case.get("exit"),
           tz)


_LONG_MESSAGE = json.dumps({"type": "assistant", "message": {"content": "x" * 320}})
_LIMIT_RESULT = json.dumps({"type": "result", "result": "You've hit your limit · resets 5pm"})


@pytest.mark.parametrize(
    ("provider", "stdout", "stderr", "exit_code"),
    [
        # A letter of the notice written as a JSON escape: the raw line holds no keyword.
        ("claude", '{"type":"result","result":"Usage \\u006cimit reached. Try again in 2 hours."}',
         "", 1),
        ("codex", '{"type":"error","message":"\\u0051uota exceeded. Check your plan."}', "", 1),
        # A terminal success on a line with no other keyword: the CLI's retries got through.
        ("codex", '{"type":"turn.completed"}', "getaddrinfo ENOTFOUND api.openai.com", None),
        ("claude", '{"type":"result","subtype":"success","is_error":false,"result":"ok"}',
         "ECONNREFUSED", None),
        # KELVIN SIGN lower-cases to `k`: these are the words `network` and `socket`.
        ("codex", "", "soc\u212aet hang up", 1),
        ("claude", '{"type":"system","subtype":"api_retry","detail":"soc\\u212aet hang up"}', "",
         1),
        ("claude", '{"type":"system","subtype":"api_retry","detail":"soc\u212aet hang up"}', "",
         1),
        # JSON may write agy's 429 as 4.29e2; the event reads `code: 429.0`.
        ("agy", '{"error":{"code":4.29e2}}', "", 1),
        # Line breaks only Unicode knows, around free text and events.
        ("claude", "hit your limit\u2028 resets 5pm", "", 1),
        ("claude", "x" * 400 + "\x85You've hit your limit · resets 5pm", "", 1),
        ("codex", "ok\r\nYou've hit your usage limit. Try again in 2 hours.\r\n", "", 1),
        # Two events on one `\n` line, parted by a break only `str.splitlines` knows: read as
        # one line they would be a long free text, never examined.
        *(
            ("claude", _LONG_MESSAGE + brk + _LIMIT_RESULT + "\n", "", 1)
            for brk in ("\u2028", "\u2029", "\x85", "\r", "\x1e")
        ),
        # A separator or a KELVIN SIGN in a line that holds no trigger, the notice elsewhere.
        ("claude", "done \u2028 ok ’\n" + _LIMIT_RESULT + "\n", "", 1),
        ("claude", _LONG_MESSAGE + "\u2029\n" + _LIMIT_RESULT + "\n", "", 1),
        ("codex", "\u212a ’\n" + "x" * 400 + "\n" + _LIMIT_RESULT + "\n", "soc\u212aet", 1),
    ],
)
def test_D_the_fast_reader_agrees_on_the_hard_cases(
    provider: str, stdout: str, stderr: str, exit_code: int | None
) -> None:
    _agree(provider, stdout, stderr, exit_code, UTC)


# --- the keyword pass ----------------------------------------------------------------------


def _plain_hits(keywords: tuple[str, ...], text: str) -> list[tuple[int, str]]:
    """Each keyword's first non-overlapping occurrences (at most 64), case-insensitively."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    hits: list[tuple[int, str]] = []
    for keyword in dict.fromkeys(keywords):
        at = lowered.find(keyword)
        while at != -1 and sum(1 for _, k in hits if k == keyword) < 64:
            hits.append((at, keyword))
            at = lowered.find(keyword, at + len(keyword))
    return sorted(hits)


KEYWORDS = ("usage limit", "limit reached", "limits will reset", "limit will reset",
            "hit your", "reached your", "quota reached", "quota exhausted", "exhausted your",
            "resource_exhausted", "resourceexhausted")


@given(
    parts=st.lists(st.sampled_from([*KEYWORDS, "limit", "quota", "exhausted", " ", "x",
                                    "LIMIT REACHED", "İ", "Q", "g", "w", "usa", "ge",
                                    "resource"]), max_size=120),
    repeat=st.integers(1, 400),
)
def test_D_keyword_hits_are_each_keywords_first_occurrences(parts: list[str], repeat: int) -> None:
    text = "".join(parts) * repeat
    assert keyword_hits(KEYWORDS, text, None) == _plain_hits(KEYWORDS, text)


@pytest.mark.parametrize("chunk", ["limit reached hit your ", "resource_exhausted quota reached ",
                                   "usage limit exhausted your limits will reset ",
                                   "limit reached hit your RESOURCE_EXHAUSTED resets "])
def test_D_keyword_hits_where_a_shared_word_is_everywhere(chunk: str) -> None:
    text = chunk * 2_000
    assert keyword_hits(KEYWORDS, text, None) == _plain_hits(KEYWORDS, text)


# --- read once, resolved at each instant (simulate) ----------------------------------------

instants = st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2030, 12, 31),
                        timezones=st.sampled_from(["UTC", "Europe/Lisbon",
                                                   "America/New_York"]).map(ZoneInfo))


@given(
    provider=st.sampled_from(PROVIDERS),
    stdout=outputs(),
    stderr=st.one_of(st.just(""), texts),
    exit_code=st.none() | st.sampled_from([0, 1, 3]),
    nows=st.lists(instants, min_size=1, max_size=4),
    tz=st.sampled_from(["UTC", "Europe/Lisbon", "Asia/Kolkata"]).map(ZoneInfo),
)
def test_D_output_read_once_classifies_as_read_afresh_at_each_instant(
    provider: str, stdout: str, stderr: str, exit_code: int | None, nows: list[datetime],
    tz: ZoneInfo,
) -> None:
    prepared = prepare_classification(provider, stdout=stdout, stderr=stderr,
                                      exit_code=exit_code)
    for now in nows:
        assert prepared.at(now, tz) == classify_output(
            provider, stdout=stdout, stderr=stderr, exit_code=exit_code, now=now, local_tz=tz
        )


@pytest.mark.parametrize("case", notice_cases())
def test_D_corpus_read_once_classifies_as_read_afresh(case: dict[str, Any]) -> None:
    stdout, stderr = case.get("stdout") or "", case.get("stderr") or ""
    tz = ZoneInfo(case["local_tz"])
    prepared = prepare_classification(case["provider"], stdout=stdout, stderr=stderr,
                                      exit_code=case.get("exit"))
    now = datetime.fromisoformat(str(case["now"])) if not isinstance(case["now"], int) else (
        datetime.fromtimestamp(case["now"], UTC))
    # The case's instant, then later ones: a clock time rolls over, a date passes (A6).
    for later in (0, 1, 7, 200, 400):
        at = now + timedelta(days=later, hours=later % 5)
        assert prepared.at(at, tz) == classify_output(
            case["provider"], stdout=stdout, stderr=stderr, exit_code=case.get("exit"), now=at,
            local_tz=tz,
        )
