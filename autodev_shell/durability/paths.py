"""The replica files beside a run store, by name and format (SPEC C3, B11, B13-B16): the
checkpoint, the shadow copy, the restore lock and a replaced store.

Names only, no dependency: `autodev status` and a daemon's start read where the files are
without loading how they are written (docs/performance.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

CHECKPOINT_SUFFIX: Final = ".checkpoint.json"
SHADOW_SUFFIX: Final = ".shadow.json"
#: What each file says it is (its `format` field).
CHECKPOINT_FORMAT: Final = "autodev-checkpoint"
SHADOW_FORMAT: Final = "autodev-shadow"
#: The recovery-only tier the shadow copy reports as (B5 default table).
SHADOW_TIER: Final = "shadow"
#: Beside the database while a restore replaces it: the restore lock of B11 (a restore that
#: died half-way leaves it, and no daemon writes the run until a restore finishes).
RESTORING_SUFFIX: Final = ".restoring"
#: Name of the moved-aside database when a restore replaces it (it is never deleted).
REPLACED_SUFFIX: Final = ".replaced-"


def checkpoint_path(db_path: str | os.PathLike[str]) -> Path:
    db = Path(db_path)
    return db.with_name(db.name + CHECKPOINT_SUFFIX)


def shadow_path(db_path: str | os.PathLike[str]) -> Path:
    db = Path(db_path)
    return db.with_name(db.name + SHADOW_SUFFIX)


def restoring_path(db_path: str | os.PathLike[str]) -> Path:
    db = Path(db_path)
    return db.with_name(db.name + RESTORING_SUFFIX)


def restore_in_progress(db_path: str | os.PathLike[str]) -> bool:
    """True while a restore replaces the store, or after one died half-way (B11)."""
    return restoring_path(db_path).exists()
