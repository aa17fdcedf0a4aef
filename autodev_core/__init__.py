"""autodev's functional core: pure decisions over frozen values (SPEC 0.1).

No I/O, clock, sleep, randomness, subprocess, environment or logging lives in this package;
time is an argument and log lines are effects. `autodev_shell` carries the effects out.
"""

from __future__ import annotations

from .classification import Classification, LimitNotice
from .engine import PROVIDERS, Engine
from .errors import AutodevError, ConfigError
from .participant import Participant, parse_participant

__all__ = [
    "PROVIDERS",
    "AutodevError",
    "Classification",
    "ConfigError",
    "Engine",
    "LimitNotice",
    "Participant",
    "parse_participant",
]
