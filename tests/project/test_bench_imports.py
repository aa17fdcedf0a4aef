"""Every bench module loads as `bench/run.py` and a reader's `python bench/X.py` load it: in a
fresh interpreter, from the checkout, with no test's `sys.path` (issue 6's figures come from
them). Session 5's move of the tests' process helpers into `tests/helpers` left
`bench_panel.py` unable to import, and `bench/run.py` wrote its row as "not run"; nothing in
the suite noticed, because pytest's own `sys.path` has `tests/` on it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in (ROOT / "bench").glob("*.py"))


def test_the_benches_are_found() -> None:
    assert {"run", "common", "bench_panel", "bench_decision"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_a_bench_module_imports_on_its_own(module: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import {module}"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
