"""What a run folder holds (SPEC C2, C6, C7, C8): its store, its log, its lanes, its sharing
status; where a run lives when `--run` is not given. The commands, the daemon, `autodev status`
and the panel all take the names from here (sqlite3 and the standard library only: `autodev
status` loads it, docs/performance.md).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

from autodev_core.errors import AutodevError

if TYPE_CHECKING:
    from .run_store import RunStore

#: Where a run lives when `--run` is not given: beside the team, in the current directory.
DEFAULT_RUN_DIR: Final = ".autodev/run"
DB_FILE: Final = "run.db"
LOG_FILE: Final = "autodev.log"
LANES_DIR: Final = "lanes"
#: Whether the run shares its limits, and where (no password): written by the daemon
#: (docs/sharing.md).
SHARING_FILE: Final = "sharing.json"
#: The loader's line for a team edit the daemon refused, for `autodev status`
#: (docs/participants.md, Editing a running team); removed when an edit is taken.
TEAM_EDIT_FILE: Final = "team-edit.txt"


def run_db(run_dir: Path) -> Path:
    return run_dir / DB_FILE


def open_existing(run_dir: Path) -> RunStore:
    """Open a run's store for a command other than `run` (no integrity scan, no lock)."""
    from .run_store import RunStore

    path = run_db(run_dir)
    if not path.exists():
        raise AutodevError(
            f"There is no run at {run_dir} (no {DB_FILE}); start one with `autodev run TEAM_DIR "
            f"--run {run_dir}`."
        )
    return RunStore.open(path, check=False)


def queue_clear(run_dir: Path, engine: str, *, now: datetime | None = None) -> int:
    """Queue `autodev limits clear ENGINE` for the daemon of the run in `run_dir` and return the
    control's id (`RunStore.enqueue_clear`): the one function `autodev limits clear` and the
    panel's Clear button call (docs/cli.md). A malformed engine is an `AutodevError` naming it."""
    store = open_existing(run_dir)
    try:
        return store.enqueue_clear(engine, now=now or datetime.now(UTC))
    except ValueError as exc:
        raise AutodevError(f"autodev limits clear: {exc}") from None
    finally:
        store.close()
