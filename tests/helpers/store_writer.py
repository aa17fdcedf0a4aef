"""A writer process for the kill -9 reliability test (tests/shell/test_reliability_store.py).

    python store_writer.py DB RUN_ID [--max N] [--replay-last] [--checkpoint]

Opens (or creates) the run store at DB, continues from its last committed revision, and
commits revisions one after another, each with posts keyed by turn and attempt and a state
blob. After each `commit` returns it prints `ack <revision>` and flushes, so every line the
test reads is a revision the store has confirmed. It first prints `start <revision>` (the
revision it found). With --replay-last it first recommits the last revision verbatim, which
must add nothing. The test kills it with SIGKILL at random instants.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta

from autodev_shell.durability.checkpoint import write_checkpoint
from autodev_shell.durability.paths import checkpoint_path
from autodev_shell.store.run_store import NewPost, RunStore

BASE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def posts_for(revision: int) -> tuple[NewPost, ...]:
    """Deterministic posts of a revision, so a replay carries exactly the same keys and text."""
    count = 1 + revision % 3
    at = BASE + timedelta(minutes=revision)
    return tuple(
        NewPost(participant=("ana", "rui")[i % 2], engine="claude:sonnet",
                text=f"post {i} of revision {revision} " + "x" * (revision * 37 % 900),
                at=at, key=f"turn-{revision}/attempt-0/part-{i}")
        for i in range(count)
    )


def state_for(revision: int) -> str:
    return json.dumps({"revision": revision, "turn": revision % 5, "pad": "s" * 300})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("run_id")
    parser.add_argument("--max", type=int, default=1_000_000)
    parser.add_argument("--replay-last", action="store_true")
    parser.add_argument("--checkpoint", action="store_true",
                        help="write the checkpoint after each commit")
    args = parser.parse_args()
    store = RunStore.open(args.db, create=True, run_id=args.run_id, now=BASE)
    revision = store.revision
    print(f"start {revision}", flush=True)
    if args.replay_last and revision > 0:
        result = store.commit(revision, posts_for(revision), state_for(revision),
                              persistence_state_json="{}", now=BASE)
        print(f"replay {revision} added {result.added}", flush=True)
    while revision < args.max:
        revision += 1
        store.commit(revision, posts_for(revision), state_for(revision),
                     persistence_state_json=json.dumps({"queued_revision": revision}),
                     now=BASE + timedelta(minutes=revision))
        sys.stdout.write(f"ack {revision}\n")
        sys.stdout.flush()
        if args.checkpoint:
            write_checkpoint(store, checkpoint_path(args.db), now=BASE)
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
