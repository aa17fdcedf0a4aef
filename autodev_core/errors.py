"""Errors the core raises when a caller or a user-written file is at fault.

A CLI saying something unexpected is never an exception: it becomes an event (STYLE: h11's
split between local and remote errors). Only misuse and bad human-written input raise here.
"""

from __future__ import annotations

import attrs


class AutodevError(Exception):
    """Base class of every error autodev raises on purpose."""


class ConfigError(AutodevError, ValueError):
    """A human-written file (participant, scenario, config) is wrong.

    The message always names the source and, when known, the line (SPEC C5).
    """

    def __init__(self, message: str, *, source: str = "<string>", line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = message
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")


@attrs.frozen
class ConfigWarning:
    """Something a human-written file says that is allowed but cannot do what it seems to.

    Data, not a side effect (SPEC 0.1): the core returns it, the shell prints it once. Written
    as a `ConfigError` is: `source:line: message` (C5).
    """

    message: str
    source: str = "<string>"
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        return f"{where}: {self.message}"
