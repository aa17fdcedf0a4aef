"""The names a core package offers and imports on first use (PEP 562), stated once.

`autodev_core`, `autodev_core.detection` and `autodev_core.simulation` each list their public
names once, by the module that holds them (`_EXPORTS`, issue 27), and import a module only when
one of its names is first asked for (`import autodev_core` stays cheap, and a command loads
only what it uses). Each package keeps its own `_module(home)` with literal relative imports —
the core imports nothing by a computed name (tests/project/test_purity.py) — and delegates the rest
here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def homes(exports: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """Each name of `exports` (module -> the names it offers) with its module; a name offered
    twice is a mistake, refused at import."""
    found = {name: home for home, names in exports.items() for name in names}
    if len(found) != sum(len(names) for names in exports.values()):
        raise ImportError("a public name is listed under two modules")  # pragma: no cover
    return found


def attribute(
    package: str,
    namespace: dict[str, Any],
    homes: Mapping[str, str],
    load: Callable[[str], ModuleType],
    name: str,
) -> Any:
    """`package`'s `__getattr__`: `name` from its home module, kept in `namespace` so the next
    lookup is a plain one; a name the package never offered is an AttributeError."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(load(home), name)
    namespace[name] = value
    return value


def names(namespace: dict[str, Any], homes: Mapping[str, str]) -> list[str]:
    """`package`'s `__dir__`: what it holds now and what it offers."""
    return sorted({*namespace, *homes})
