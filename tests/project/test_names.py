"""Each word the core and the fast `status` path share is stated once, in `autodev_core.names`
(issue 27): the statuses (A42) and wait statuses, the turn kinds (B18), the log kinds, the
providers (A8) and `PersistenceState`'s JSON fields (B4). The other modules take them from
there; a scan of the source finds no second list of them. The shell's control words (C6) map to
their events in one table."""

from __future__ import annotations

import ast
import json
import sys
import typing
from pathlib import Path

import attrs
import pytest

import autodev_core
import autodev_shell
from autodev_core import names
from autodev_core.control import turn_input
from autodev_core.control.persistence import PersistenceState
from autodev_core.scheduler import effects, state
from autodev_core.serialization import to_json
from autodev_shell.status import read as status_read
from autodev_shell.status import stored as stored_status

#: The module, not the function `autodev_core.scheduler.step` that its package offers.
step_module = sys.modules["autodev_core.scheduler.step"]

SOURCES = sorted(
    path
    for package in (autodev_core, autodev_shell)
    for path in Path(package.__file__).resolve().parent.rglob("*.py")
    if "__pycache__" not in path.parts
)

#: Each shared list, and how many of its words in one literal collection (a tuple, list or set,
#: a `Literal[...]`, or for the fields a dict's keys) make a copy of it. A rule that names a few
#: statuses (`_AFTER_DECIDING`, a check of the SPEC's machine) is not a copy; a dict keyed by
#: provider holds a value each (A6's default waits), not the list.
LISTS: dict[str, tuple[frozenset[str], int]] = {
    "STATUSES": (frozenset(names.STATUSES), len(names.STATUSES)),
    "WAIT_STATUSES": (frozenset(names.WAIT_STATUSES), len(names.WAIT_STATUSES)),
    "TURN_KINDS": (frozenset(names.TURN_KINDS), len(names.TURN_KINDS)),
    "LOG_KINDS": (frozenset(names.LOG_KINDS), len(names.LOG_KINDS) // 2),
    "PROVIDERS": (frozenset(names.PROVIDERS), len(names.PROVIDERS)),
    "PAUSE_REASONS": (frozenset(names.PAUSE_REASONS), 3),
    "PERSISTENCE_FIELDS": (frozenset(names.PERSISTENCE_FIELDS), 4),
}
#: The stand-in CLIs' script runs as its own program, importing nothing of autodev (SPEC C6):
#: the binaries' names are its own.
NOT_SCANNED = {Path(names.__file__).resolve(),
               Path(autodev_shell.__file__).resolve().parent / "standins" / "_standin.py"}


def restatements(tree: ast.AST) -> list[tuple[int, str]]:
    """Each literal collection in `tree` that holds enough words of one shared list to be a
    copy of it, with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        keyed = isinstance(node, ast.Dict)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [key for key in node.keys if key is not None]
        else:
            continue
        words = {item.value for item in items
                 if isinstance(item, ast.Constant) and isinstance(item.value, str)}
        for name, (listed, enough) in LISTS.items():
            if (name == "PERSISTENCE_FIELDS" or not keyed) and len(words & listed) >= enough:
                found.append((node.lineno, name))
    return found


def test_27_no_module_but_names_restates_a_shared_list() -> None:
    assert len(SOURCES) >= 60, "the scan must see both packages"
    found = {
        f"{path.name}:{line} {name}"
        for path in SOURCES
        if path not in NOT_SCANNED
        for line, name in restatements(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert sorted(found) == []


def test_27_the_scan_finds_a_restated_list() -> None:
    planted = ast.parse(
        'WAITS = ("rate_limited", "unreachable", "backing_off")\n'
        'Kind = Literal["fresh", "no-new-input"]\n'
        'x = {"pending_persist": 1, "writes_blocked": 1, "queued_revision": 1,'
        ' "queued_reason": 1}\n'
        'if p in ["claude", "codex", "agy"]: pass\n'
        f'k = frozenset({names.LOG_KINDS[3:17]!r})\n'
        'fine = ("running", "paused", "stopped", "rate_limited")\n'
        'per_provider = {"claude": 1, "codex": 2, "agy": 3}\n')
    assert sorted(name for _, name in restatements(planted)) == [
        "LOG_KINDS", "PERSISTENCE_FIELDS", "PROVIDERS", "TURN_KINDS", "WAIT_STATUSES"]


def test_27_the_lists_are_their_literal_types() -> None:
    assert names.STATUSES == typing.get_args(names.Status) == (
        "running", "rate_limited", "unreachable", "backing_off", "paused", "stopped")  # A42
    assert names.WAIT_STATUSES == ("rate_limited", "unreachable", "backing_off")  # A18, A26
    assert typing.get_args(names.WaitStatus) == names.WAIT_STATUSES
    assert names.TURN_KINDS == typing.get_args(names.TurnKind) == ("fresh", "no-new-input")
    assert typing.get_args(names.LogKind) == names.LOG_KINDS
    assert len(set(names.LOG_KINDS)) == len(names.LOG_KINDS)


@pytest.mark.parametrize(("user", "attribute", "shared"), [
    (effects, "STATUSES", "STATUSES"), (effects, "WAIT_STATUSES", "WAIT_STATUSES"),
    (effects, "TURN_KINDS", "TURN_KINDS"), (effects, "LOG_KINDS", "LOG_KINDS"),
    (effects, "Status", "Status"), (effects, "TurnKind", "TurnKind"),
    (effects, "LogKind", "LogKind"), (state, "STATUSES", "STATUSES"),
    (turn_input, "TurnKind", "TurnKind"), (stored_status, "STATUSES", "STATUSES"),
    (stored_status, "PROVIDERS", "PROVIDERS"),
    (status_read, "_PERSISTENCE_FIELDS", "PERSISTENCE_FIELDS"),
])
def test_27_each_user_holds_the_one_definition(user: object, attribute: str, shared: str) -> None:
    assert getattr(user, attribute) is getattr(names, shared)


def test_27_the_scheduler_s_table_uses_the_one_definition() -> None:
    import autodev_core.engine

    assert frozenset(names.STATUSES) == step_module._ALL
    assert step_module._WAITS is names.WAIT_STATUSES
    assert autodev_core.engine.PROVIDERS is names.PROVIDERS
    assert autodev_core.PROVIDERS is names.PROVIDERS and autodev_core.STATUSES is names.STATUSES


def test_B4_persistence_fields_are_the_class_s_fields() -> None:
    """`PersistenceState` is an attrs class (its converters check what it holds); its fields,
    in order, and the JSON type of each, are `names.PERSISTENCE_FIELDS`."""
    fields = attrs.fields(PersistenceState)
    assert [f.name for f in fields] == list(names.PERSISTENCE_FIELDS)
    # A field's type is its annotation's text, or the type once something resolved it.
    assert {f.name: getattr(f.type, "__name__", f.type) for f in fields} == {
        name: kind.__name__ for name, kind in names.PERSISTENCE_FIELDS.items()}
    written = json.loads(to_json(PersistenceState(pending_persist=True, queued_revision=3)))
    assert {key: type(value) for key, value in written.items()} == names.PERSISTENCE_FIELDS


def test_C6_control_names_map_to_events_once() -> None:
    """`autodev stop|pause|resume|say`: the store's words (`CONTROL_COMMANDS`) are the keys of
    the loop's one table of events, and the name an event is logged under is read back from
    that same table."""
    from autodev_core.scheduler import (
        LimitCleared,
        MessageArrived,
        PauseRequested,
        ResumeRequested,
        StopRequested,
    )
    from autodev_shell import runner
    from autodev_shell.store.command_queue import CONTROL_COMMANDS

    assert {"stop", "pause", "resume", "say", "clear"} == CONTROL_COMMANDS  # C6, limits clear
    assert dict(runner._CONTROL_EVENTS) == {"stop": StopRequested, "pause": PauseRequested,
                                            "resume": ResumeRequested, "say": MessageArrived,
                                            "clear": LimitCleared}
    assert set(runner._CONTROL_EVENTS) == CONTROL_COMMANDS
    assert {name: runner._CONTROL_EVENTS[name] for name in runner._CONTROL_NAMES.values()} == (
        dict(runner._CONTROL_EVENTS))
    assert all(runner._CONTROL_NAMES[event] == name
               for name, event in runner._CONTROL_EVENTS.items())
