"""B21's second half: every dependency a shell component expects is provided by its builder.

`start_run` builds the daemon's components. The test records what it passes to each one and
compares that with what the component's signature asks for: every parameter must be passed,
or listed below with the reason its default is right. A new dependency that the builder forgets
(a parameter added with a default, never wired in) fails here instead of silently running on
the default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from autodev_shell import runner as runner_module
from autodev_shell.calls import lanes as lanes_module
from autodev_shell.calls.lanes import Lanes
from autodev_shell.cli import commands
from autodev_shell.clock import SystemClock
from autodev_shell.durability.writes import Durability
from autodev_shell.runner import Runner, StreamLog
from autodev_shell.store.run_store import RunStore
from autodev_shell.team import load_team

#: Parameters the builder may leave to their defaults, each with why the default is right.
DEFAULTED: dict[str, dict[str, str]] = {
    "Runner": {
        "perform_call": "the default runs the participant's real CLI through its adapter",
        "slice_seconds": "passed only when the caller of start_run sets it (tests, demo)",
    },
    "Durability.open": {
        "tiers": "the shell's store is SQLite, canonical in DEFAULT_TIERS (B5)",
        "search": "the reference CLI keeps no search replica (B13: optional)",
        "checkpoint_file": "derived from the store's path",
        "shadow_file": "derived from the store's path",
        "shadow_max_bytes": "the documented cap (docs/store.md)",
        "cadence": "the core's DEFAULT_CADENCE, the documented replica sync (docs/store.md)",
    },
    "RunStore.open": {
        "integrity_id": "the reference CLI's run has no integrity id besides its run id",
        "aliases": "none known at creation",
        "check": "the daemon runs the full integrity check (the default)",
        "tier": "SQLite is the canonical tier",
        "factory": "tests inject disk faults with it; the daemon uses sqlite3's",
    },
    "StreamLog": {},
    "Lanes": {
        "max_bytes": "the documented lane size (C8)",
        "files": "the documented rotation (C8)",
    },
}


def _expected(function: Callable[..., Any], *, skip: tuple[str, ...] = ("self",)) -> set[str]:
    params = inspect.signature(function).parameters.values()
    return {p.name for p in params
            if p.name not in skip and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def _record(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}

    def spy(name: str, real: Callable[..., Any], positional: tuple[str, ...]) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            seen[name] = set(positional[: len(args)]) | set(kwargs)
            return real(*args, **kwargs)
        return call

    # start_run imports its components when it runs: patch them where it finds them.
    monkeypatch.setattr(runner_module, "Runner", spy("Runner", Runner, ()))
    monkeypatch.setattr(Durability, "open", staticmethod(
        spy("Durability.open", Durability.open, ("store", "identity"))))
    monkeypatch.setattr(RunStore, "open", staticmethod(
        spy("RunStore.open", RunStore.open, ("path",))))
    monkeypatch.setattr(runner_module, "StreamLog", spy("StreamLog", StreamLog, ("zone",)))
    monkeypatch.setattr(lanes_module, "Lanes", spy("Lanes", Lanes, ("directory",)))
    return seen


#: What each component's signature asks for, read before any test patches them.
WANTED: dict[str, set[str]] = {
    "Runner": _expected(Runner.__init__),
    "Durability.open": _expected(Durability.open, skip=("cls",)),
    "RunStore.open": _expected(RunStore.open, skip=("cls",)),
    "StreamLog": _expected(StreamLog.__init__),
    "Lanes": _expected(Lanes.__init__),
}


def gaps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         wanted: dict[str, set[str]]) -> dict[str, list[str]]:
    """Build a run with start_run and say, per component, what it asks for and is neither
    given by the builder nor listed in DEFAULTED."""
    team_dir = tmp_path / "team"
    team_dir.mkdir()
    (team_dir / "ana.md").write_text("---\nprovider: claude\n---\nWork.\n", encoding="utf-8")
    seen = _record(monkeypatch)
    clock = SystemClock()
    commands.start_run(load_team(team_dir), tmp_path / "run", run_id="t", clock=clock,
                       installed=frozenset({"claude"}), stop_at=clock.now() - timedelta(1))
    assert set(seen) == set(wanted), "start_run builds each component"
    return {name: sorted(params - seen[name] - set(DEFAULTED[name]))
            for name, params in wanted.items() if params - seen[name] - set(DEFAULTED[name])}


def test_B21_every_dependency_of_each_shell_component_is_provided_by_start_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert gaps(tmp_path, monkeypatch, WANTED) == {}
    for name, params in WANTED.items():
        stale = set(DEFAULTED[name]) - params
        assert not stale, f"{name} no longer takes {sorted(stale)}: drop it from DEFAULTED"


def test_B21_the_check_fails_on_a_gap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A Runner that grew a dependency the builder never passes (and nobody listed).
    grown = {**WANTED, "Runner": WANTED["Runner"] | {"clock_skew_guard"}}
    assert gaps(tmp_path, monkeypatch, grown) == {"Runner": ["clock_skew_guard"]}
