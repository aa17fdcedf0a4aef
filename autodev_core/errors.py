"""Errors the core raises when a caller or a user-written file is at fault.

A CLI saying something unexpected is never an exception: it becomes an event (STYLE: h11's
split between local and remote errors). Only misuse and bad human-written input raise here.
"""

from __future__ import annotations


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
