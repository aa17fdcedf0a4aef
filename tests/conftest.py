"""Hypothesis profiles: `ci` (derandomized, no deadline), `dev` (default), `thorough`, `sweep`.

`sweep` is `dev` without the example database, for tests/sweep.py: each seed's draw stands on
its own, so a failure is reported under the seed that found it, not replayed into the others.

Pick one with HYPOTHESIS_PROFILE; CI=true selects `ci` when none is named.
"""

from __future__ import annotations

import os
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
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
