"""A daemon-like writer whose disk really fails, for tests/shell/test_reliability_store.py.

    python fsize_writer.py DB LIMIT_BYTES

Root ignores file permissions, so the failure is made with a resource limit instead: the soft
RLIMIT_FSIZE is lowered to LIMIT_BYTES (SIGXFSZ ignored), so once SQLite's WAL would grow past
it, the kernel refuses the write (EFBIG) and SQLite reports an error — a real failed write, not
a mock. The writer persists revisions through `Durability` until one is not committed, persists
two more while the disk is "full", then lifts the limit (the disk "comes back") and persists
once more. Each result is printed as one JSON line.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
from datetime import UTC, datetime, timedelta

from autodev_core.control.identity import resolve_active_identity
from autodev_shell.durability.writes import Durability, PersistResult
from autodev_shell.store.run_store import NewPost, RunStore

BASE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
RUN = resolve_active_identity(run_id="run-1")
MAX_REVISIONS = 400


def posts_for(revision: int) -> tuple[NewPost, ...]:
    return (NewPost("ana", "claude", f"revision {revision} " + "y" * 3000,
                    BASE + timedelta(minutes=revision), key=f"turn-{revision}/0"),)


def report(result: PersistResult) -> None:
    print(json.dumps({
        "revision": result.revision, "outcome": result.outcome, "error": result.error,
        "pending": list(result.pending), "gate": result.gate.reason,
        "may_start": result.gate.may_start, "pending_persist": result.state.pending_persist,
        "writes_blocked": result.state.writes_blocked,
        "last_accepted": result.state.last_accepted_revision,
    }), flush=True)


def main() -> int:
    db, limit = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # A refused write returns EFBIG instead.
    store = RunStore.open(db)
    durability = Durability.open(store, RUN)
    _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    revision = store.revision
    failed_at = None
    while revision < MAX_REVISIONS:
        revision += 1
        result = durability.persist_revision(revision, posts_for(revision), "{}", identity=RUN,
                                             now=BASE + timedelta(minutes=revision))
        report(result)
        if result.outcome != "committed" and failed_at is None:
            failed_at = revision
        if failed_at is not None and revision >= failed_at + 2:
            break
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # The disk comes back.
    revision += 1
    report(durability.persist_revision(revision, posts_for(revision), "{}", identity=RUN,
                                       now=BASE + timedelta(minutes=revision)))
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
