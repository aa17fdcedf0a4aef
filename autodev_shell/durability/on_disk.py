"""What a run's store and shadow copy hold, read without writing anything (B8, B9, C3): where
the daemon (`Durability.open`) and `autodev status` both start from.

Kept apart from `writes`, `checkpoint` and `shadow_file` so that `autodev status` reads it
without loading the replica planner, the checkpoint and the write path (docs/performance.md): the
shadow
file's format is imported only when a shadow copy is there to read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from autodev_core.control.identity import RunIdentity
from autodev_core.control.mutation import recovery_still_active
from autodev_core.control.persistence import (
    DEFAULT_TIERS,
    PersistenceState,
    Queued,
    TierRoles,
    reduce_persistence,
    settle_stale_pending,
)
from autodev_core.serialization import from_json

from .paths import SHADOW_TIER, shadow_path

if TYPE_CHECKING:
    from ..store.run_store import RunStore
    from .shadow_file import PendingRevision, ShadowCopy

@attrs.frozen
class OnDisk:
    """What a store and its shadow copy hold for a run, read without writing anything: the
    persistence state as committed (its stale flag settled by the core, B8), the shadow's
    revisions of this run that the store does not hold yet (oldest first), the shadow's
    revisions of other runs (kept, never applied, B9), and the highest revision known
    anywhere (store, marker, shadow)."""

    state: PersistenceState
    pending: tuple[PendingRevision, ...]
    foreign: tuple[PendingRevision, ...]
    store_revision: int
    highest_revision: int
    dropped: tuple[str, ...] = ()


def read_on_disk(store: RunStore, identity: RunIdentity, *, shadow_file: Path | None = None,
                 tiers: TierRoles = DEFAULT_TIERS) -> OnDisk:
    """The facts `Durability.open` and `autodev status` both start from (B8, B9, C3).
    An unreadable shadow file raises `ReplicaFileError` naming it."""
    committed = store.committed_state()  # not the thread: its posts play no part here
    # The state was committed queued, before its own Accepted (B6): the marker committed
    # beside it lets the core's B8 planner clear that stale flag for this run.
    marker = committed.marker.as_core() if committed.marker is not None else None
    state = settle_stale_pending(
        load_state(committed.persistence_state_json), identity, marker=marker, tiers=tiers,
    ).state
    shadow = _read_shadow(shadow_file or shadow_path(store.path))
    entries = shadow.pending if shadow is not None else ()
    own = tuple(p for p in entries if recovery_still_active(p.run_id, identity))
    pending = tuple(p for p in own if p.revision > committed.revision)
    foreign = tuple(p for p in entries if not recovery_still_active(p.run_id, identity))
    highest = max([committed.revision, marker.revision if marker else 0,
                   *(p.revision for p in entries)])
    if pending:
        state = reduce_persistence(
            state,
            Queued(pending[-1].revision, pending[-1].run_id,
                   reason="restored from the shadow copy", recoverable_tier=SHADOW_TIER),
            tiers=tiers,
        )
    return OnDisk(state, pending, foreign, committed.revision, highest,
                  shadow.dropped if shadow is not None else ())


def _read_shadow(path: Path) -> ShadowCopy | None:
    """`read_shadow(path)`; without loading the shadow file's format when there is no file."""
    try:
        path.stat()
    except FileNotFoundError:
        return None
    except OSError:
        pass  # `read_shadow` names the file and the reason
    from .shadow_file import read_shadow

    return read_shadow(path)


def load_state(text: str) -> PersistenceState:
    """The persistence state committed with the last revision; a fresh store holds `{}`."""
    state: PersistenceState = from_json(text or "{}", PersistenceState)
    return state
