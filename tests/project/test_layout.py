"""The core's folders are its parts, and the parts depend on each other one way (issue 15).

- Shared values (the modules at the top of `autodev_core`) use only each other.
- The notice reader (`detection/`) and the run-state control plane (`control/`) use only values.
- The turn scheduler (`scheduler/`) uses values and the reader's `classification` — the meaning
  of an output, never the output itself (A1) — and nothing else of the reader.
- The simulator (`simulation/`) uses the scheduler and the reader (SPEC D: answers classified as
  real output would be).
- `testing/` and the package's `__init__` may use every part; no part uses them.

Two former modules became packages and still offer their public names, imported on first use:
`autodev_core.detection` and `autodev_core.simulation` (docs/design.md, CHANGELOG).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import autodev_core

CORE = Path(autodev_core.__file__).resolve().parent

# part -> the parts it may import from ("values" = a module at the top of the core)
MAY_USE: dict[str, set[str]] = {
    "values": {"values"},
    "detection": {"values", "detection"},
    "control": {"values", "control"},
    "scheduler": {"values", "scheduler", "detection.classification"},
    "simulation": {"values", "simulation", "scheduler", "detection"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _part(module: str) -> str:
    """`autodev_core.scheduler.step` -> "scheduler"; `autodev_core.engine` -> "values"."""
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    if (CORE / parts[1]).is_dir():
        return parts[1]
    return "values"


def _imports(path: Path, module: str, top: str = "autodev_core") -> list[tuple[int, str]]:
    """Every module of the package `top` that `path`, the module `module`, imports from
    (relative imports resolved), with its line."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
                if node.module:
                    found.append((node.lineno, target))
                else:  # `from . import x`: each name is a module of that package
                    found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
            elif node.module and node.module.split(".")[0] == top:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == top]
    return found


def _allowed(importer: str, target: str) -> bool:
    source, goal = _part(importer), _part(target)
    if source in ("package", "testing"):
        return True
    if goal in ("package", "testing"):
        return False
    allowed = MAY_USE[source]
    return goal in allowed or any(
        "." in entry and (target == f"autodev_core.{entry}"
                          or target.startswith(f"autodev_core.{entry}."))
        for entry in allowed
    )


def wrong_way(files: list[tuple[Path, str]]) -> list[str]:
    """The imports that go the wrong way in `files` (each a path and its module name)."""
    found = []
    for path, importer in files:
        for line, target in _imports(path, importer):
            if not _allowed(importer, target):
                found.append(f"{importer}:{line}: {_part(importer)} imports {target}")
    return found


def test_15_every_part_of_the_core_has_its_folder() -> None:
    folders = {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    assert {"detection", "scheduler", "control", "simulation", "testing"} <= folders
    assert set(MAY_USE) - {"values"} <= folders


def test_15_the_parts_depend_on_each_other_one_way() -> None:
    files = sorted(p for p in CORE.rglob("*.py") if "__pycache__" not in p.parts)
    assert len(files) >= 20, "the check must see the core's modules"
    assert wrong_way([(path, _module_name(path)) for path in files]) == []


def test_15_the_check_catches_an_import_the_wrong_way(tmp_path: Path) -> None:
    # Stand-in files, read as if they were these modules of the core.
    planted = {
        "autodev_core.scheduler.planted": "from ..detection.reader import classify_output\n",
        "autodev_core.control.planted": "from ..scheduler import step\n",
        "autodev_core.planted": "from .simulation.driver import simulate\n",
        "autodev_core.detection.planted": "from autodev_core.testing import SchedulerMachine\n",
        "autodev_core.times": "from . import control\n",
    }
    files = []
    for number, (module, code) in enumerate(planted.items()):
        path = tmp_path / f"m{number}.py"
        path.write_text(code, encoding="utf-8")
        files.append((path, module))
    found = wrong_way(files)
    assert len(found) == len(planted), found
    fine = tmp_path / "fine.py"
    fine.write_text("from ..detection.classification import LimitNotice\n"
                    "from ..engine import Engine\nfrom .state import SchedulerState\n",
                    encoding="utf-8")
    assert wrong_way([(fine, "autodev_core.scheduler.fine")]) == []


# -- the two former modules that are packages now -----------------------------------------------


def _loaded(code: str) -> set[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


# The names SPEC D and the docs gave these two paths before they were packages.
OLD_NAMES = {
    "autodev_core.detection": ["classify_output", "detect_limit", "detect_login_error",
                               "detect_network_error"],
    "autodev_core.simulation": ["simulate", "scheduler_config", "SimulationResult"],
}
NEW_HOME = {"autodev_core.detection": "autodev_core.detection.reader",
            "autodev_core.simulation": "autodev_core.simulation.driver"}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_15_a_former_module_still_offers_its_names(old: str) -> None:
    code = (f"import importlib\nold = importlib.import_module({old!r})\n"
            f"new = importlib.import_module({NEW_HOME[old]!r})\n"
            f"for name in {OLD_NAMES[old]!r}:\n"
            "    assert getattr(old, name) is getattr(new, name), name\n"
            "    assert name in old.__all__ and name in dir(old), name\n"
            f"from {old} import {OLD_NAMES[old][0]}\n")
    assert NEW_HOME[old] in _loaded(code)


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_15_a_former_module_is_lazy(old: str) -> None:
    # Importing the package, or one of its light modules, does not load the heavy one.
    sibling = {"autodev_core.detection": "classification",
               "autodev_core.simulation": "scenario"}[old]
    loaded = _loaded(f"import {old}\nimport {old}.{sibling}")
    assert NEW_HOME[old] not in loaded


def test_15_a_former_module_refuses_a_name_it_never_had() -> None:
    import autodev_core.detection as detection

    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = detection.no_such_name


# -- the shell's folders (issue 27 item 1) ---------------------------------------------------------

SHELL = Path(autodev_core.__file__).resolve().parent.parent / "autodev_shell"

#: The shell's parts (its folders, and the modules at its top) -> the parts each may import from.
#: Low to high: files and time; the store; what is durable; the loop's parts and the calls; status
#: and sharing; the team; the runner; the panel; the CLI, which may use everything.
SHELL_MAY_USE: dict[str, set[str]] = {
    "private": set(),
    "clock": set(),
    "standins": set(),
    "asyncio_harness": set(),
    "store": {"private"},
    "durability": {"store", "private"},
    "loop": {"store", "durability", "clock", "private"},
    "calls": {"store", "clock", "private", "loop"},
    "status": {"store", "durability"},
    "sharing": {"status"},
    "story": {"private", "store", "calls", "clock"},  # docs/timeline.md
    "notify": {"story"},  # docs/notifications.md: the events file beside the notifier
    "team": {"calls", "sharing", "notify"},
    "runner": {"calls", "clock", "durability", "loop", "private", "sharing", "store"},
    "panel": {"calls", "durability", "status", "store", "team", "private", "clock", "story"},
    "adapters": {"calls"},
}


def _shell_part(module: str) -> str:
    """`autodev_shell.store.sql` -> "store"; `autodev_shell.runner` -> "runner"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "package"


def shell_wrong_way(files: list[tuple[Path, str]]) -> list[str]:
    found = []
    for path, importer in files:
        source = _shell_part(importer)
        if source in ("package", "cli"):
            continue
        for line, target in _imports(path, importer, "autodev_shell"):
            goal = _shell_part(target)
            if goal not in (source, "package") and goal not in SHELL_MAY_USE[source]:
                found.append(f"{importer}:{line}: {source} imports {target}")
    return found


def _shell_module(path: Path) -> str:
    parts = list(path.relative_to(SHELL.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_27_every_part_of_the_shell_is_named() -> None:
    tops = {p.stem for p in SHELL.glob("*.py") if p.stem != "__init__"}
    folders = {p.name for p in SHELL.iterdir() if (p / "__init__.py").is_file()}
    assert tops | folders == set(SHELL_MAY_USE) | {"cli"}


def test_27_the_shell_s_parts_depend_on_each_other_one_way() -> None:
    files = sorted(p for p in SHELL.rglob("*.py") if "__pycache__" not in p.parts)
    assert len(files) >= 40, "the check must see the shell's modules"
    assert shell_wrong_way([(path, _shell_module(path)) for path in files]) == []


def test_27_the_shell_check_catches_an_import_the_wrong_way(tmp_path: Path) -> None:
    planted = {
        "autodev_shell.store.planted": "from ..durability.paths import shadow_path\n",
        "autodev_shell.status.planted": "from ..runner import Runner\n",
        "autodev_shell.panel.planted": "from ..cli.commands import start_run\n",
        "autodev_shell.durability.planted": "from autodev_shell.loop.commits import Commits\n",
    }
    files = []
    for number, (module, code) in enumerate(planted.items()):
        path = tmp_path / f"m{number}.py"
        path.write_text(code, encoding="utf-8")
        files.append((path, module))
    assert len(shell_wrong_way(files)) == len(planted)
    fine = tmp_path / "fine.py"
    fine.write_text("from ..store.sql import StoreError\nfrom .paths import shadow_path\n",
                    encoding="utf-8")
    assert shell_wrong_way([(fine, "autodev_shell.durability.fine")]) == []


def test_27_the_shell_s_modules_import_no_cycle() -> None:
    """Module by module, not only part by part: `checkpoint` and `on_disk` imported each other
    before the shadow file's format had one home (issue 27)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(p for p in SHELL.rglob("*.py") if "__pycache__" not in p.parts):
        module = _shell_module(path)
        graph[module] = {t for _line, t in _imports(path, module, "autodev_shell") if t != module}
    known = set(graph)
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, trail: list[str]) -> bool:
        state[node] = 1
        for target in sorted(graph[node] & known):
            if target.startswith(node + ".") or node.startswith(target + "."):
                continue  # a package and its own modules
            if state.get(target) == 1:
                cycle.extend([*trail, node, target])
                return True
            if target not in state and visit(target, [*trail, node]):
                return True
        state[node] = 2
        return False

    for module in sorted(graph):
        if module not in state and visit(module, []):
            break
    assert cycle == []
