"""A lane's footer carries what a limit was read as (docs/shell.md, Lanes; C8, A6): two limited
calls with different resets have different footers, and a notice with no reset says the
default wait stands in. Real stand-in CLIs, real classification."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from helpers.clock import T0

from autodev_shell.calls import build_argv, run_call
from autodev_shell.calls.lanes import Lanes
from autodev_shell.standins import install_standins, standin_env, write_script
from autodev_shell.story.calls import parse_lane


def _lane(tmp_path: Path, name: str, answer: dict[str, object]) -> str:
    bin_dir = install_standins(tmp_path / "bin")
    script = write_script(tmp_path / f"{name}.json", {"claude": [answer]})
    lanes = Lanes(tmp_path / "lanes")
    lanes.begin_call(name, engine="claude", argv=["claude", "-p", "x"], at=T0)
    result = run_call(build_argv("claude", "x"), provider="claude",
                      env=standin_env(bin_dir, script), timeout=30, sink=lanes.sink(name))
    lanes.end_call(name, result)
    return lanes.read(name)


def _footer(tmp_path: Path, name: str, answer: dict[str, object]) -> str:
    return _lane(tmp_path, name, answer).rstrip("\n").rsplit("\n", 1)[-1]


def test_C8_a_limited_calls_footer_names_the_reset_it_read(tmp_path: Path) -> None:
    early = datetime(2026, 12, 8, 1, 41, tzinfo=UTC)
    late = datetime(2026, 12, 8, 6, 5, tzinfo=UTC)
    first = _footer(tmp_path, "ana", {"kind": "limit", "resets_at": int(early.timestamp())})
    second = _footer(tmp_path, "rui", {"kind": "limit", "resets_at": int(late.timestamp())})
    assert first.endswith("; read as limit until 2026-12-08 01:41 UTC (from the notice)")
    assert second.endswith("; read as limit until 2026-12-08 06:05 UTC (from the notice)")


def test_C8_A6_a_notice_with_no_reset_says_the_default_wait_stands_in(tmp_path: Path) -> None:
    footer = _footer(tmp_path, "ana", {"kind": "limit", "notice": "Claude usage limit reached."})
    assert footer.endswith(
        "; read as limit (the notice named no reset: the default wait, A6)"), footer


def test_C8_a_post_footer_is_unchanged(tmp_path: Path) -> None:
    footer = _footer(tmp_path, "ana", {"post": "done"})
    assert footer.endswith("exit 0; read as other; posted")


def test_C8_the_timeline_reads_a_limit_footer_with_its_reading(tmp_path: Path) -> None:
    """The run's story (autodev_shell/story) parses the footer with its reading as a limit."""
    resets = datetime(2026, 12, 8, 1, 41, tzinfo=UTC)
    lane = _lane(tmp_path, "ana", {"kind": "limit", "resets_at": int(resets.timestamp())})
    assert [call.outcome for call in parse_lane(lane)] == ["limit"]
