"""Hypothesis profiles: `ci` (derandomized, no deadline), `dev` (default), `thorough`, `sweep`.

`sweep` is `dev` without the example database, for tests/sweep.py: each seed's draw stands on
its own, so a failure is reported under the seed that found it, not replayed into the others.

Pick one with HYPOTHESIS_PROFILE; CI=true selects `ci` when none is named.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.register_profile("sweep", deadline=None, max_examples=100, database=None, print_blob=True)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=2_000,
    stateful_step_count=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark, as `hypothesis`, every test of a module that runs a state machine by hand.

    Hypothesis' plugin marks `@given` tests and a machine's `TestCase`, but a test that calls
    `run_state_machine_as_test` itself carries no mark, so `pytest -m hypothesis` (and
    tests/sweep.py, issue 24) would never draw it under a fresh seed. `run_machine` is
    tests/helpers/machines.py's way of calling it.
    """
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and any(hasattr(module, name)
                                      for name in ("run_state_machine_as_test", "run_machine")):
            item.add_marker(pytest.mark.hypothesis)
    if hasattr(config, "workerinput"):  # a pytest-xdist worker (the README's `-n 6`)
        items.sort(key=_folder_rank)  # stable: within a folder, the collected order


#: Under pytest-xdist, the folders whose tests mostly wait (daemons, real CLIs, servers, Chromium)
#: are handed out first, so the longest tests start early and the CPU-bound core tests fill the
#: gaps, instead of a worker being left at the end with a minute-long daemon test. Every worker
#: collects in this same order, as xdist requires.
_FIRST = ("e2e", "browser", "shell")
_TESTS = Path(__file__).resolve().parent


def _folder_rank(item: pytest.Item) -> int:
    path = Path(str(item.path)).resolve()
    parts = path.relative_to(_TESTS).parts if path.is_relative_to(_TESTS) else ()
    return _FIRST.index(parts[0]) if parts and parts[0] in _FIRST else len(_FIRST)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the project's modules once when Python is told not to write bytecode
    (PYTHONDONTWRITEBYTECODE=1, as on this project's machines): the suite starts thousands of
    daemons, CLIs and helpers, and each would compile what it imports from source again (a third
    of a daemon's start). Python reads the compiled files whatever that setting; the workers of
    `-n` leave this to the main process, which runs it before they start."""
    if not sys.dont_write_bytecode or hasattr(session.config, "workerinput"):
        return
    import compileall

    for folder in (_TESTS.parent / "autodev_core", _TESTS.parent / "autodev_shell",
                   _TESTS / "helpers"):
        compileall.compile_dir(folder, quiet=2)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `-n` (xdist's default `--dist load`), hand the tests out one at a time, but each
    module of tests/browser whole to one worker.

    xdist's `load` scheduler sends each worker a run of a few hundred consecutive tests, sized
    for tests that all take about as long: here a run of e2e daemon tests (tens of seconds each)
    would queue on one worker while the others finish their millisecond core tests and wait. A
    browser module starts its Chromium and its panels once per worker that runs one of its tests
    (module fixtures), so each goes whole to one worker. (`--dist loadgroup` with `xdist_group`
    marks would do the same, but with pytest 9.2 it silently stops grouping: pytest-xdist issue
    1386.) Another `--dist` keeps xdist's own scheduler.
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneAtATime(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module.startswith("tests/browser/") else nodeid

    return OneAtATime(config, log)


@pytest.fixture
def standins(tmp_path: Path) -> Callable[..., dict[str, str]]:
    """The stand-in CLIs installed under `tmp_path` (A12); `standins(script)` writes the script
    they answer from and gives the environment that puts them first on PATH. (A module may
    define its own, e.g. one that also logs the calls.)"""
    from autodev_shell.standins import install_standins, standin_env, write_script

    bin_dir = install_standins(tmp_path / "bin")

    def make(script: Mapping[str, Any]) -> dict[str, str]:
        return standin_env(bin_dir, write_script(tmp_path / "script.json", script))

    return make


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[Any]:
    """A redis-server of the test's own, for a test that kills, pauses or restarts it (A25);
    stopped after the test (`helpers.redis_server.RedisServer`)."""
    from helpers.redis_server import RedisServer

    with RedisServer(tmp_path / "r") as server:
        yield server
