"""A short command loads only what it uses (issue 13): checked on `sys.modules` in a fresh
interpreter, not by timing (the times are in bench/bench_cold.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

# Heavy or unneeded at import: YAML and cattrs (read on first use), the test harness, the
# scheduler (step, events), detection and the simulator.
NEVER_AT_IMPORT = ("yaml", "cattrs", "hypothesis", "autodev_core.testing",
                   "autodev_core.scheduler", "autodev_core.detection", "autodev_core.simulation")


def _loaded(code: str) -> set[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("module", NEVER_AT_IMPORT)
def test_importing_the_core_loads_none_of_it(module: str) -> None:
    assert module not in _loaded("import autodev_core")


@pytest.mark.parametrize("module", (*NEVER_AT_IMPORT, "sqlite3", "subprocess",
                                    "autodev_shell.runner", "autodev_shell.store.run_store"))
def test_building_the_cli_parser_loads_none_of_it(module: str) -> None:
    assert module not in _loaded("from autodev_shell.cli import build_parser; build_parser()")


def test_every_public_name_still_imports_from_the_core() -> None:
    code = ("import autodev_core\n"
            "names = list(autodev_core.__all__)\n"
            "assert names and all(getattr(autodev_core, n) is not None for n in names)\n"
            "from autodev_core import step, simulate, detect_limit, SchedulerState\n"
            "assert callable(step) and callable(simulate) and callable(detect_limit)\n"
            "assert set(dir(autodev_core)) >= set(names)")
    assert "autodev_core.scheduler" in _loaded(code)


# --- short commands on a run (C6): they read what they show, and load nothing else ------------

#: What `autodev status` has no use for: the scheduler and cattrs (it reads the few stored fields
#: it shows from their JSON), the write path and the replica planner (durability, checkpoint,
#: replicas: only a shadow copy on disk is read through the checkpoint module), the sharing
#: client, the sleeper, the loop and the CLIs' adapters, YAML, the turn inputs (B19).
NEVER_FOR_STATUS = ("autodev_core.scheduler", "cattrs", "yaml", "autodev_core.control.replicas",
                    "autodev_shell.durability.writes", "autodev_shell.durability.checkpoint",
                    "autodev_shell.sharing", "autodev_shell.loop.sleeper", "autodev_shell.runner",
                    "autodev_shell.calls", "autodev_core.control.turn_input", "socket")


def _stored_run(directory: Path) -> Path:
    """A run whose store holds a scheduler state with limits, an outage and a wait."""
    from autodev_core.control.persistence import PersistenceState
    from autodev_core.engine import Engine
    from autodev_core.participant import Participant
    from autodev_core.scheduler import (
        EngineLimit,
        Outage,
        SchedulerConfig,
        initial_state,
    )
    from autodev_core.serialization import to_json
    from autodev_shell.store.run_store import NewPost, RunStore

    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    config = SchedulerConfig(team=(Participant(id="ana", provider="claude"),
                                   Participant(id="rui", provider="codex")),
                             timezone="Europe/Lisbon")
    state = attrs.evolve(
        initial_state(config), status="rate_limited", due=1, iterations=7,
        limits=(EngineLimit(Engine("claude"), at + timedelta(hours=2), source="laptop/other"),),
        outages=(Outage("codex", at + timedelta(minutes=4), attempts=2),),
        wait_until=at + timedelta(minutes=4),
    )
    run = directory / "run"
    run.mkdir()
    store = RunStore.open(run / "run.db", create=True, run_id="cold", now=at)
    try:
        store.commit(1, (NewPost("ana", "claude", "hello", at, key="turn-1/0"),), to_json(state),
                     persistence_state_json=to_json(PersistenceState()), now=at)
    finally:
        store.close()
    return run


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _stored_run(tmp_path_factory.mktemp("cold"))


def _command(args: list[str]) -> str:
    return ("import contextlib, io\nfrom autodev_shell.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    assert main({args!r}) == 0\n"
            "assert out.getvalue()")


@pytest.mark.parametrize("json_flag", ([], ["--json"]), ids=("text", "json"))
def test_C6_status_loads_neither_the_scheduler_nor_cattrs(stored_run: Path,
                                                          json_flag: list[str]) -> None:
    loaded = _loaded(_command(["status", "--run", str(stored_run), *json_flag]))
    assert "autodev_shell.status.stored" in loaded  # it did read the stored state
    assert sorted(m for m in NEVER_FOR_STATUS if m in loaded) == []


def _daemon_run(directory: Path) -> Path:
    """A run as the daemon leaves it: revisions persisted through `Durability` (each state
    stored queued, before its own acceptance, with the commit marker beside it), a heartbeat."""
    from autodev_core.control.identity import resolve_active_identity
    from autodev_core.participant import Participant
    from autodev_core.scheduler import SchedulerConfig, initial_state
    from autodev_core.serialization import to_json
    from autodev_shell.durability.writes import Durability
    from autodev_shell.store.run_store import NewPost, RunStore

    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    state = initial_state(SchedulerConfig(team=(Participant(id="ana", provider="claude"),),
                                          timezone="Europe/Lisbon"))
    run = directory / "daemon-run"
    run.mkdir()
    store = RunStore.open(run / "run.db", create=True, run_id="cold", now=at)
    try:
        identity = resolve_active_identity(run_id=store.run_id)
        durability = Durability.open(store, identity)
        for revision in (1, 2):
            durability.persist_revision(
                revision, (NewPost("ana", "claude", "hi", at, key=f"turn-{revision}/0"),),
                to_json(state), identity=identity, now=at)
        store.heartbeat(at, pid=4242)
    finally:
        store.close()
    return run


#: What a status of a run as it normally is has no use for either (issue 13): attrs itself (the
#: store's records, the persistence planner and `Engine` are attrs classes), the planner, and
#: argparse (`status [--run DIR] [--json]` spelt in full is read without building the parser).
NEVER_FOR_A_NORMAL_STATUS = (*NEVER_FOR_STATUS, "attr", "attrs", "autodev_core.engine",
                             "autodev_core.control.persistence", "autodev_shell.store.run_store",
                             "autodev_shell.durability.on_disk", "argparse")


@pytest.mark.parametrize("json_flag", ([], ["--json"]), ids=("text", "json"))
@pytest.mark.parametrize("daemon", (False, True), ids=("committed", "daemon-written"))
def test_C6_status_of_a_normal_run_loads_no_attrs(stored_run: Path, tmp_path: Path,
                                                  json_flag: list[str], daemon: bool) -> None:
    run = _daemon_run(tmp_path) if daemon else stored_run
    loaded = _loaded(_command(["status", "--run", str(run), *json_flag]))
    assert "autodev_shell.status.stored" in loaded  # it did read the stored state
    assert sorted(m for m in NEVER_FOR_A_NORMAL_STATUS if m in loaded) == []


@pytest.mark.parametrize("command", (["say", "hello"], ["pause"], ["resume"], ["stop"]))
def test_C6_operator_commands_load_only_the_store(stored_run: Path, command: list[str]) -> None:
    loaded = _loaded(_command([*command, "--run", str(stored_run)]))
    assert "autodev_shell.store.run_store" in loaded
    # They queue a command: no state is read, so neither the persistence planner nor a zone.
    unused = (*NEVER_FOR_STATUS, "autodev_core.control.persistence",
              "autodev_shell.durability.on_disk",
              "autodev_shell.status.stored", "zoneinfo")
    assert sorted(m for m in unused if m in loaded) == []


def test_B4_the_persistence_state_is_read_without_cattrs() -> None:
    """A flat record (bools, ints, text) is read as the converter would read it, without it."""
    loaded = _loaded(
        "from autodev_core.control.persistence import PersistenceState\n"
        "from autodev_core.serialization import from_json, to_json\n"
        "state = PersistenceState(pending_persist=True, queued_revision=4, queued_run_id='r')\n"
        "assert from_json(" + repr('{"pending_persist": true, "queued_revision": 4, '
                                   '"queued_run_id": "r"}') + ", PersistenceState) == state")
    assert "cattrs" not in loaded


# --- `status [--run DIR] [--json]` read without the parser -------------------------------------

_TOKENS = ("status", "--json", "--run", "runs/a", "", "-x", "--run=b", "--js", "--ru", "-h",
           "--help", "--", "-5", "a b", "say", "--fast")


def _parsed(argv: list[str]) -> object:
    """What the parser makes of `argv`: its arguments, or the exit it asks for."""
    import contextlib
    import io

    from autodev_shell.cli import build_parser

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return vars(build_parser().parse_args(argv))
        except SystemExit as exc:
            return ("exit", exc.code)


@given(st.lists(st.sampled_from(_TOKENS), max_size=6).map(lambda rest: ["status", *rest])
       | st.lists(st.sampled_from(_TOKENS), max_size=6))
def test_C6_status_arguments_read_without_the_parser_are_the_parser_s(argv: list[str]) -> None:
    from autodev_shell.cli import quick_status_args

    quick = quick_status_args(argv)
    if quick is not None:
        assert vars(quick) == _parsed(argv)


@pytest.mark.parametrize("argv", (["status"], ["status", "--json"], ["status", "--run", "d"],
                                  ["status", "--json", "--run", ""],
                                  ["status", "--run", "a b", "--json"]))
def test_C6_status_as_users_write_it_is_read_without_the_parser(argv: list[str]) -> None:
    from autodev_shell.cli import quick_status_args

    quick = quick_status_args(argv)
    assert quick is not None and vars(quick) == _parsed(argv)
