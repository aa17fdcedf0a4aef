"""Twin classes: how the core builds a value it derived itself without re-running attrs' checks.

A frozen attrs instance can only be filled through `object.__setattr__` (a C call per field).
A *twin* is a plain class with the same `__slots__` and no `__setattr__` of its own: a builder
fills a twin by plain assignment, then makes it an instance of the frozen class by setting its
`__class__`, which CPython allows between classes of the same slot layout (and refuses when a
class has a `__weakref__` slot, so such classes are declared with `weakref_slot=False`). Used
by the scheduler (scheduler/_build.py), the reader (detection/classification.py) and the
simulator (simulation/driver.py) for values made from already checked ones (issue 13).
"""

from __future__ import annotations

from typing import Any

import attrs


def check_twin(cls: type, twin: type, where: str) -> None:
    """Refuse, at import, a `twin` that does not hold exactly `cls`'s fields in field order or
    cannot become a `cls`: a builder can then never leave a slot unset. `where` names the file
    to update."""
    fields = tuple(a.name for a in attrs.fields(cls))
    if getattr(cls, "__slots__", None) != fields or getattr(twin, "__slots__", None) != fields:
        raise ImportError(  # pragma: no cover - a class changed under its builder
            f"{cls.__name__}'s slots are {getattr(cls, '__slots__', None)}, its fields {fields}: "
            f"update {twin.__name__} in {where}"
        )
    probe: Any = object.__new__(twin)
    for name in fields:
        setattr(probe, name, None)
    try:
        probe.__class__ = cls
    except TypeError as exc:  # pragma: no cover - e.g. a `__weakref__` slot came back
        raise ImportError(f"{twin.__name__} cannot become a {cls.__name__}: {exc}") from None


def twin_of(cls: type) -> Any:
    """A twin of the frozen slotted attrs class `cls`, generated from it: a subclass that adds
    no slot and takes back `object`'s own `__setattr__`/`__delattr__` (both: CPython then
    stores by plain slot writes), so a builder fills it by plain assignment and makes it a
    `cls` by setting `__class__`. Being `cls` with nothing added, it has `cls`'s fields by
    construction, and CPython checks the class change by walking up to `cls` instead of
    comparing the two classes' slot names one by one: about half the cost of a twin declared
    on its own (issue 13). Typed `Any`: the builders' signatures carry the types."""
    if "__weakref__" in getattr(cls, "__slots__", ()) or "__dict__" in cls.__dict__:
        raise ImportError(  # pragma: no cover - a class changed under its builders
            f"{cls.__name__} needs weakref_slot=False and slots for a twin")
    twin = type(f"_{cls.__name__}Twin", (cls,), {
        "__slots__": (),
        "__setattr__": object.__setattr__,
        "__delattr__": object.__delattr__,
        "__module__": cls.__module__,
        "__doc__": f"{cls.__name__}, writable while a builder fills it (`_twins.twin_of`).",
    })
    probe: Any = object.__new__(twin)
    probe.__class__ = cls  # raises at import if CPython ever refuses the change
    return twin
