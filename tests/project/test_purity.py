"""SPEC 0.1: the core does no I/O, reads no clock, sleeps not, draws no random numbers,
spawns nothing, reads no environment and logs nothing. Proven by scanning its AST."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import autodev_core

CORE = Path(autodev_core.__file__).parent

FORBIDDEN_MODULES = {
    "os",
    "sys",
    "io",
    "subprocess",
    "socket",
    "time",
    "random",
    "secrets",
    "threading",
    "asyncio",
    "logging",
    "shutil",
    "sqlite3",
    "tempfile",
    "pathlib",
    "signal",
    "select",
    "multiprocessing",
    "concurrent",
    "urllib",
    "http",
    "requests",
    "glob",
    "fcntl",
    "uuid",
    "builtins",
    "importlib",
    "ctypes",
    "mmap",
    "pty",
    "warnings",
}
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval", "compile", "__import__", "breakpoint"}
# Methods that read the clock, the environment or files, whatever object they hang on
# (`datetime.now()`, `Path.read_text()`); a field called `now` is fine, calling `.now()` is not.
FORBIDDEN_METHODS = {
    "now",
    "utcnow",
    "today",
    "getenv",
    "sleep",
    "system",
    "popen",
    "monotonic",
    "perf_counter",
    "time_ns",
    "urandom",
    "read_text",
    "write_text",
    "read_bytes",
    "write_bytes",
    "getLogger",
}
FORBIDDEN_ATTRS = {"environ"}


def _core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(CORE.parent)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_MODULES:
                    found.append(f"{where} imports {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
                found.append(f"{where} imports from {node.module}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_CALLS:
                found.append(f"{where} calls {node.func.id}()")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in FORBIDDEN_METHODS:
                found.append(f"{where} calls .{node.func.attr}()")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS:
            found.append(f"{where} uses .{node.attr}")
    return found


def test_core_has_no_io_clock_randomness_subprocess_or_logging() -> None:
    files = _core_files()
    assert len(files) >= 5, "the scan must actually see the core's modules"
    problems = [v for path in files for v in _violations(path)]
    assert problems == []


def test_the_scan_catches_impurity(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import time\nfrom datetime import datetime\nx = datetime.now()\ny = event.now\n"
        "open('f')\nimport logging\n",
        encoding="utf-8",
    )
    found = _violations_at(bad)
    assert any("imports time" in v for v in found)
    assert any(".now()" in v for v in found)
    assert any("open()" in v for v in found)
    assert any("imports logging" in v for v in found)
    assert not any(":4 " in v for v in found), "reading a field named `now` is pure"


def _violations_at(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    original = CORE
    try:
        globals()["CORE"] = path.parent
        return _violations(path)
    finally:
        globals()["CORE"] = original
        del tree


def test_every_core_module_imports_without_the_shell() -> None:
    for info in pkgutil.walk_packages([str(CORE)], prefix="autodev_core."):
        module = importlib.import_module(info.name)
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        assert "autodev_shell" not in source, f"{info.name} reaches into the shell"
