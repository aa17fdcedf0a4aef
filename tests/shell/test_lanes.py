"""Lanes: each participant's raw CLI output, bounded and rotated (SPEC C8, A32)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_shell.calls import build_argv, run_call
from autodev_shell.calls.lanes import LANE_FILES, LANE_MAX_BYTES, Lanes, NoLaneError, read_lane
from autodev_shell.standins import install_standins, standin_env, write_script


def test_C8_lane_appends_and_reads_back(tmp_path: Path) -> None:
    lanes = Lanes(tmp_path)
    lanes.append("ana", "first\n")
    lanes.append("ana", b"second\n")
    lanes.append("rui", "other lane\n")
    assert read_lane(tmp_path, "ana") == "first\nsecond\n"
    assert lanes.read("rui") == "other lane\n"


def test_C8_rotation_keeps_the_newest_output_within_the_bound(tmp_path: Path) -> None:
    lanes = Lanes(tmp_path, max_bytes=100, files=3)
    for i in range(50):
        lanes.append("ana", f"line {i:03d} " + "x" * 20 + "\n")  # 30 bytes each
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["ana.log", "ana.log.1", "ana.log.2"]
    assert all(p.stat().st_size <= 100 for p in tmp_path.iterdir())
    text = read_lane(tmp_path, "ana", files=3)
    assert text.endswith("line 049 " + "x" * 20 + "\n")
    assert "line 000" not in text
    numbers = [int(line.split()[1]) for line in text.splitlines()]
    assert numbers == sorted(numbers), "oldest first, in order"
    assert numbers == list(range(numbers[0], 50)), "nothing lost inside the kept window"


@given(sizes=st.lists(st.integers(min_value=1, max_value=700), max_size=40))
def test_C8_a_lane_never_exceeds_files_times_max_bytes(sizes: list[int]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as raw:
        lanes = Lanes(raw, max_bytes=256, files=3)
        for size in sizes:
            lanes.append("ana", b"y" * size)
        total = sum(p.stat().st_size for p in Path(raw).iterdir())
        assert total <= 3 * 256
        assert all(p.stat().st_size <= 256 for p in Path(raw).iterdir())
        if sizes:
            assert read_lane(raw, "ana").endswith("y" * min(sizes[-1], 256))


def test_C8_defaults() -> None:
    assert (LANE_MAX_BYTES, LANE_FILES) == (1024 * 1024, 3)


def test_C8_no_lane_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NoLaneError, match="no lane for 'eva'"):
        read_lane(tmp_path, "eva")


@pytest.mark.parametrize("bad", ["../etc", "a/b", "", ".hidden"])
def test_C8_lane_ids_cannot_escape_the_directory(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        Lanes(tmp_path).append(bad, "x")
    with pytest.raises(ValueError):
        read_lane(tmp_path, bad)


def test_A32_C8_an_unauthenticated_codex_shows_its_own_error_in_its_lane(
    tmp_path: Path,
) -> None:
    bin_dir = install_standins(tmp_path / "bin")
    script = write_script(tmp_path / "s.json", {"codex": [{"kind": "unauthenticated"}]})
    lanes = Lanes(tmp_path / "lanes")
    prompt = "review " + "the change " * 40
    argv = build_argv("codex", prompt)
    lanes.begin_call("rui", engine="codex", argv=argv, at=T0, stdin_chars=len(prompt))
    result = run_call(argv, provider="codex", env=standin_env(bin_dir, script), timeout=30,
                      sink=lanes.sink("rui"), input=prompt)
    lanes.end_call("rui", result)
    text = lanes.read("rui")
    assert "401 Unauthorized" in text
    # The prompt went on stdin: the header says how long it was, not what it said.
    header = "=== 2026-12-01T09:00:00+00:00 rui on codex: codex exec"
    assert f"{header} <{len(prompt)} chars on stdin>" in text
    assert "exit 1; read as other" in text
    assert result.classification.kind == "other"  # A32: a plain failed call for the core


def test_C8_lane_records_how_a_call_ended(tmp_path: Path) -> None:
    bin_dir = install_standins(tmp_path / "bin")
    script = write_script(
        tmp_path / "s.json", {"codex": [{"kind": "reconnecting", "interval": 0.2}]}
    )
    lanes = Lanes(tmp_path / "lanes")
    result = run_call(build_argv("codex", "x"), provider="codex",
                      env=standin_env(bin_dir, script), timeout=60, sink=lanes.sink("rui"))
    lanes.end_call("rui", result)
    text = lanes.read("rui")
    assert "Reconnecting..." in text
    assert "stopped early: network" in text
