"""Shared by the builder tests: an unchecked value must be indistinguishable from the checked
one built from the same arguments (docs/performance.md)."""

from __future__ import annotations

from typing import Any


def same(checked: Any, unchecked: Any) -> None:
    assert type(unchecked) is type(checked)
    assert unchecked == checked
    assert checked == unchecked
    assert hash(unchecked) == hash(checked)
    assert repr(unchecked) == repr(checked)
