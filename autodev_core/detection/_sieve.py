"""The byte-level sieve of the reader (detection's speed work: a call's output may be 10 MB,
docs/performance.md): which lines of a text hold a trigger, found on bytes without decoding.

A trigger is a word every keyword of a detector contains, lower case (`triggers_for`). The bytes
are the text encoded as latin-1, one byte per character (so positions are the text's), a
character past U+00FF written `?`; `bytes.lower` folds the ASCII letters, and the keywords are
ASCII. No character past U+00FF lower-cases to an ASCII letter but KELVIN SIGN (U+212A, to
`k`), and none is a line break but U+2028 and U+2029: the full reader runs instead where KELVIN
SIGN is in the text and a trigger holds a `k`, or where a separator is in a line the fast reader
decodes (a line without a trigger may hold one: its parts hold no trigger either).
"""

from __future__ import annotations

import functools

from ._bounded import _groups

_BREAKS = b"\r\x0b\x0c\x1c\x1d\x1e"  # besides "\n", the ASCII line breaks of `str.splitlines`
_UPPER = bytes(range(ord("A"), ord("Z") + 1))
_FOLD_LATIN1 = bytes.maketrans(_UPPER + _BREAKS + b"\x85", _UPPER.lower() + b"\n" * 7)
_KELVIN = "\u212a"  # KELVIN SIGN
SEPARATORS = ("\u2028", "\u2029")  # LINE and PARAGRAPH SEPARATOR
# A JSON `\\u` escape may spell any character: a line holding one that spells an ASCII one (or
# KELVIN SIGN) is always decoded. Other escapes stand for characters no trigger holds (quote,
# backslash, control characters); `\\/` is why triggers hold no `/`.
ESCAPE_ASCII = b"\\u00"
ESCAPE_KELVIN = b"\\u212a"  # needed only when a trigger holds a `k`


def as_latin1(text: str, triggers: tuple[bytes, ...]) -> tuple[bytes, bool] | None:
    """The text as latin-1 bytes, one per character, those past U+00FF written `?`, and whether
    there were such characters; None when a KELVIN SIGN might be the `k` of a trigger."""
    try:
        return text.encode("latin-1"), False
    except UnicodeEncodeError:
        if _KELVIN in text and any(b"k" in trigger for trigger in triggers):
            return None
        return text.encode("latin-1", "replace"), True


def triggers_for(*keyword_sets: tuple[str, ...], extra: tuple[str, ...] = ()) -> tuple[bytes, ...]:
    """Words such that each keyword of `keyword_sets` (and each of `extra`) holds one: lower
    case, no `/`.

    The words `keyword_hits` finds each set's keywords through; a `/` may be written `\\/` in
    JSON, so a word holding one is cut there and its longest part kept.
    """
    words = {
        max(shared.split("/"), key=len).encode("ascii")
        for keywords in keyword_sets
        for shared, _ in _groups(keywords)
    }
    words.update(word.encode("ascii") for word in extra)
    # A word holding another is found through it.
    return tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))


def mentions(text: str, triggers: tuple[bytes, ...]) -> bool:
    """Whether `text` may hold a keyword of `triggers` (case-insensitively); True when unsure."""
    encoded = as_latin1(text, triggers)
    if encoded is None:
        return True
    raw = encoded[0]
    if len(raw) >= 2 * _BLOCK:  # through the sieve
        return bool(latin1_spans(raw, triggers))
    low = raw.lower()
    return any(trigger in low for trigger in triggers)


def _spans(low: bytes, triggers: tuple[bytes, ...]) -> list[tuple[int, int]]:
    """The (start, end) of every line of `low` holding a trigger, in order."""
    spans: set[tuple[int, int]] = set()
    for trigger in triggers:
        pos = low.find(trigger)
        while pos != -1:
            start = low.rfind(b"\n", 0, pos) + 1
            end = low.find(b"\n", pos)
            if end == -1:
                end = len(low)
            spans.add((start, end))
            pos = low.find(trigger, end)
    return sorted(spans)


# A sieve before the search: each trigger is looked for in blocks of the text from which the
# bytes no trigger needs have been dropped (`bytes.translate` with `delete`, which folds the
# case in the same pass). A trigger written in the text is still there, as the letters of it
# that were kept, one after the other; so a block whose sifted form holds no trigger's kept
# letters holds no trigger, and only the other blocks (rounded out to whole lines) are searched
# as before. Dropping the most frequent letters keeps the sifted blocks short, and each trigger
# keeps at least `_SIFT_KEEP` letters, so that few blocks pass the sieve without a trigger.
_BLOCK = 1 << 16  # bytes per sifted block; texts under two blocks are searched directly
_SIFT_KEEP = 4
_FREQUENT = b" etaoinshrdlcumwfgypbvkjxqz"  # space and letters, most frequent in English first
_LOWER = bytes.maketrans(_UPPER, _UPPER.lower())
# The sieve gives up when one block in this many (or more) passes it or hardly shrinks: the
# rest is searched directly, so a text full of triggers (or of their letters) costs little more.
_SIFT_GIVE_UP = 4


@functools.cache
def _sieve(triggers: tuple[bytes, ...]) -> tuple[bytes, tuple[bytes, ...]]:
    """The bytes the sieve drops (both cases of a letter), and what is left of each trigger."""
    kept = set(b"".join(triggers))
    for byte in _FREQUENT:
        fewer = kept - {byte}
        if byte in kept and all(
            sum(c in fewer for c in trigger) >= min(len(trigger), _SIFT_KEEP)
            for trigger in triggers
        ):
            kept = fewer
    kept |= {c - 32 for c in kept if ord("a") <= c <= ord("z")}
    drop = bytes(c for c in range(256) if c not in kept)
    left = {bytes(c for c in trigger if c in kept) for trigger in triggers}
    return drop, tuple(sorted(w for w in left if not any(o != w and o in w for o in left)))


def latin1_spans(raw: bytes, triggers: tuple[bytes, ...]) -> list[tuple[int, int]]:
    """`_spans` of latin-1 bytes, lower-cased and with every line break a "\\n"; through the
    sieve when the text is long."""
    size = len(raw)
    if size < 2 * _BLOCK:
        return _region_spans(raw, 0, size, triggers)
    drop, left = _sieve(triggers)
    reach = max(map(len, triggers)) - 1  # blocks overlap: a trigger is whole in one of them
    spans: list[tuple[int, int]] = []
    pos = sifted = useless = 0
    while pos < size:
        end = min(size, pos + _BLOCK + reach)
        sifted += 1
        kept = raw[pos:end].translate(_LOWER, drop)
        # A block left more than half whole (mostly letters of triggers) is not searched for
        # what is left of them (a slow search there), but directly.
        if 2 * len(kept) <= end - pos and not any(word in kept for word in left):
            pos += _BLOCK
        else:
            useless += 1
            start = raw.rfind(b"\n", 0, pos) + 1  # the block's lines, whole
            pos = raw.find(b"\n", end)
            if pos == -1:
                pos = size
            spans.extend(_region_spans(raw, start, pos, triggers))
            pos += 1
        if useless >= 2 and useless * _SIFT_GIVE_UP >= sifted:
            # The sieve does not pay: the rest is searched directly.
            start = raw.rfind(b"\n", 0, pos) + 1 if pos < size else size
            spans.extend(_region_spans(raw, start, size, triggers))
            break
    return spans


def _region_spans(
    raw: bytes, start: int, stop: int, triggers: tuple[bytes, ...]
) -> list[tuple[int, int]]:
    """`_spans` of the whole lines `raw[start:stop]` of latin-1 bytes, at their place in `raw`."""
    region = raw if start == 0 and stop == len(raw) else raw[start:stop]
    breaks = any(brk in region for brk in _BREAKS) or b"\x85" in region
    low = region.translate(_FOLD_LATIN1) if breaks else region.lower()
    return [(start + a, start + b) for a, b in _spans(low, triggers)]
