"""No two modules of autodev_core import each other, directly or in a loop (STYLE: one-way
imports). Every import counts — at run time, inside a function, or under `TYPE_CHECKING` — and a
package's `__init__` is a module like any other: `from ..detection import x` imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import autodev_core

CORE = Path(autodev_core.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in CORE.rglob("*.py"):
        parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The core modules `name` imports (a name imported from a package that is a module of it
    counts as that module; any other, as the package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    found.add(f"{source}.{alias.name}")
                elif source in modules:
                    found.add(source)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other by imports (Tarjan's strongly connected
    components with more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return groups


def test_no_two_core_modules_import_each_other() -> None:
    graph = import_graph()
    assert len(graph) > 40  # the whole core was read
    assert cycles(graph) == [], "core modules that import each other, directly or in a loop"


def test_a_cycle_is_found_when_there_is_one() -> None:
    """The check has teeth: a loop of three, and two modules importing each other."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(cycles(graph)) == [["a", "b", "c"], ["d", "e"]]


def test_imports_under_type_checking_and_in_functions_count(tmp_path: Path) -> None:
    module = tmp_path / "a.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .b import B\n"
        "def f():\n    from ..pkg import c\n",
        encoding="utf-8",
    )
    modules = {"pkg": tmp_path, "pkg.a": module, "pkg.b": tmp_path / "b.py",
               "pkg.c": tmp_path / "c.py"}
    assert _imports("pkg.a", module, modules) == {"pkg.b", "pkg.c"}
