"""A CLI's clock times are read in the CLI's own zone, never in the run's `timezone:` (SPEC A3, A6;
docs/limits.md). The run's zone is for writing `<time>`; codex writes `try again at 4:01 AM` in
the zone of its process (its `TZ`, else the machine's). With `timezone: Europe/Lisbon` — the
docs' own example — and the CLIs in America/New_York, a reset 2 h 17 min ahead was read as one
21 h 17 min ahead."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from helpers.daemons import Daemon, wait_for

from autodev_core.engine import Engine

CLI_ZONE = "America/New_York"
AHEAD = timedelta(hours=2, minutes=17)


def test_A6_a_codex_clock_time_is_read_in_the_clis_zone_not_the_runs(tmp_path: Path) -> None:
    reset = datetime.now(UTC) + AHEAD
    printed = reset.astimezone(ZoneInfo(CLI_ZONE)).strftime("%-I:%M %p")
    notice = ("ERROR: You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/"
              f"pro), visit https://chatgpt.com/codex/settings/usage to purchase more credits or "
              f"try again at {printed}.")
    d = Daemon(tmp_path, {"rui": "codex", "bob": "claude"},
               {"codex": [{"stderr": notice, "exit": 1}], "default": {"post": "ok"}})
    (d.team / "autodev.yaml").write_text("timezone: Europe/Lisbon\n", encoding="utf-8")
    d.env["TZ"] = CLI_ZONE
    d.start()
    try:
        def codex_limit() -> datetime | None:
            state = d.state()
            found = [x.until for x in (state.limits if state else ()) if
                     x.engine == Engine("codex")]
            return found[0] if found else None

        wait_for(codex_limit, "codex's limit recorded")
        until = codex_limit()
        assert until is not None
        # The printed minute of the reset: at most a minute before it, never hours off.
        assert reset - timedelta(minutes=1) <= until <= reset, (until, reset)
    finally:
        d.stop()
