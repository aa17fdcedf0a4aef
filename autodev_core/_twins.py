"""Twin classes: how the core builds a value it derived itself without re-running attrs' checks.

A frozen attrs instance can only be filled through `object.__setattr__` (a C call per field).
A *twin* is generated from the frozen class (`twin_of`): a subclass adding no slot and with no
`__setattr__` of its own, so a builder fills it by plain assignment, then makes it an instance
of the frozen class by setting its `__class__` (CPython allows it between classes of the same
slot layout; `twin_of` takes only classes declared `weakref_slot=False`, as the twins declared
by hand before it needed). It is the one way the core builds values from already checked ones
(issues 13, 27): the scheduler's builders (scheduler/_build.py, whose code is itself generated
from the classes' fields by tests/helpers/gen_builders.py), `CallEnded`'s own `__init__`
(scheduler/events.py), the step's draft state (scheduler/step.py), the reader's notices
(detection/classification.py) and the simulator's lines (simulation/driver.py).
"""

from __future__ import annotations

from typing import Any


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
