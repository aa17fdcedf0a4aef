"""A short command loads only what it uses (issue 13): checked on `sys.modules` in a fresh
interpreter, not by timing (the times are in bench/bench_cold.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
                                    "autodev_shell.runner", "autodev_shell.store"))
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
