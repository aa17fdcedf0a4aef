"""The instant the tests start from: 1 December 2026, 09:00 UTC (a Tuesday, in winter: Lisbon is
on UTC, so a clock time read there is the same instant). One definition for the suite; a test
that needs another instant names it beside the rule it checks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

T0: Final = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
