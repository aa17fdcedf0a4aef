"""The provider adapters' former module: its public names now live in `autodev_shell.calls`
(docs/design.md) and stay importable from here, so code written against `autodev_shell.adapters`
keeps working."""

from __future__ import annotations

from .calls import *  # noqa: F403 — this module is only the old name of the package
from .calls import __all__ as __all__
