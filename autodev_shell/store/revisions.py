"""Revisions in the run store: the commit of one revision, the run state, the commit marker,
and the whole store as a snapshot (SPEC C3, B8, B14, B15).

A part of `RunStore` (store/run_store.py). Each revision is one `BEGIN IMMEDIATE … COMMIT`
transaction: its posts, the run state, the marker (and the controls it carries out) land
together or not at all.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

import attrs

from .layout import migrate
from .sql import (
    StoreConnection,
    StoreError,
    _rollback,
    _scalar,
    _text,
    _time,
    size_wal,
)
from .thread import NewPost, Post, _posts, _save_turn_input

if TYPE_CHECKING:  # loaded where used: `autodev pause` reads no state (docs/performance.md)
    from autodev_core.control.persistence import CommitMarker
    from autodev_core.control.turn_input import InputRecord


@attrs.frozen
class Marker:
    """The commit marker (C3): which run, which revision, which tier, when."""

    run_id: str
    revision: int
    tier: str
    at: datetime

    def as_core(self) -> CommitMarker:
        """The marker as the core's B8 planner reads it. A marker exists only inside a
        committed transaction, so it is accepted by construction."""
        from autodev_core.control.persistence import CommitMarker

        return CommitMarker(run_id=self.run_id, revision=self.revision, tier=self.tier)


@attrs.frozen
class Snapshot:
    """Everything the canonical store holds for a run, read in one transaction (B15's source).

    `revision` 0 means nothing was ever committed.
    """

    run_id: str
    integrity_id: str
    aliases: tuple[str, ...]
    revision: int
    scheduler_state_json: str
    persistence_state_json: str
    marker: Marker | None
    posts: tuple[Post, ...]


@attrs.frozen
class CommitResult:
    """What one commit did: `added` posts are new, `duplicates` were already there (a
    replay). `replayed` is true when `revision` was not above the stored one, so the state
    and marker were left as they were."""

    revision: int
    added: int
    duplicates: int
    replayed: bool


class StoreRevisions(StoreConnection):
    """The revisions of one run's store: commit, snapshot, marker, revision."""

    #: Whether this connection has seen the store at the current layout; until then each write
    #: of a revision checks it (store_layout.py) inside its transaction.
    _layout_current = False
    #: Whether this connection has given the WAL its working size (`store_sql.size_wal`): its
    #: first commit does, so that later commits overwrite the WAL instead of growing it.
    _wal_sized = False

    # --- the revision commit (C3) -----------------------------------------------------------

    def commit(
        self,
        revision: int,
        posts: Sequence[NewPost],
        scheduler_state_json: str,
        *,
        persistence_state_json: str,
        now: datetime,
        run_id: str | None = None,
        taken_controls: Sequence[int] = (),
        turn_inputs: Sequence[InputRecord] = (),
    ) -> CommitResult:
        """Commit one revision in one transaction: its posts, the run state and the marker.
        `taken_controls` are the ids of queued controls this revision carries out (a `say`'s
        post, a pause…): they are marked taken in the same transaction, so a control is never
        taken without its effect, nor its effect written without taking it.

        Posts are keyed, so replaying a commit never duplicates one. A revision not above the
        stored one is a replay: its missing posts are added, state and marker stay. The
        marker carries `run_id` (the run the write was queued for; default: the store's run).
        Raises `StoreError` when nothing was written.
        """
        if isinstance(revision, bool) or not isinstance(revision, int) or revision <= 0:
            raise ValueError(f"a committed revision is a positive int, not {revision!r}")
        for name, value in (("scheduler_state_json", scheduler_state_json),
                            ("persistence_state_json", persistence_state_json)):
            if not isinstance(value, str):
                raise TypeError(f"{name} is JSON text from the core's converter, not {value!r}")
        stamp = _text(now)
        marker_run = (self.run_id if run_id is None else run_id).strip()
        conn = self._conn
        # `_transaction`, spelt out on the hot path (each commit): no generator, no message built
        # unless something fails.
        if conn.in_transaction:  # A failed ROLLBACK earlier left one open; start clean.
            _rollback(conn)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._error(f"commit revision {revision}", exc, write=True) from exc
        try:
            if not self._layout_current:
                migrate(conn)  # a layout-1 store: its first commit brings it to layout 2
            if not self._wal_sized:
                size_wal(conn)
                self._wal_sized = True
            added, replayed = _write_revision(
                conn, revision, posts, scheduler_state_json, persistence_state_json,
                stamp=stamp, marker=(marker_run, self.tier), taken_controls=taken_controls,
                turn_inputs=turn_inputs)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise self._error(f"commit revision {revision}", exc, write=True) from exc
        except BaseException:
            _rollback(conn)
            raise
        self._layout_current = True
        return CommitResult(revision, added, len(posts) - added, replayed)

    def import_snapshot(self, snapshot: Snapshot, *, now: datetime) -> None:
        """Fill this store, which must be empty, from `snapshot` in one transaction: the
        restore path of a checkpoint (B14). Posts keep their seq and revision."""
        with self._transaction("import a snapshot") as conn:
            migrate(conn)
            stored = int(_scalar(conn, "SELECT revision FROM run_state WHERE id = 1"))
            count = int(_scalar(conn, "SELECT count(*) FROM posts"))
            if stored or count:
                raise StoreError(
                    f"The run store {self.path} is not empty (revision {stored}, {count} posts),"
                    " so a snapshot cannot be imported into it.",
                    path=self.path, kind="write-failed", detail="not empty",
                )
            conn.execute("UPDATE run SET run_id = ?, integrity_id = ? WHERE id = 1",
                         (snapshot.run_id, snapshot.integrity_id))
            self._run_id = snapshot.run_id
            conn.executemany("INSERT OR IGNORE INTO aliases (alias, added_at) VALUES (?, ?)",
                             [(a, _text(now)) for a in snapshot.aliases])
            conn.executemany(
                "INSERT INTO posts (seq, post_key, revision, at, participant, engine, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(p.seq, p.key, p.revision, _text(p.at), p.participant, p.engine, p.text)
                 for p in snapshot.posts],
            )
            m = snapshot.marker
            conn.execute(
                "UPDATE run_state SET revision = ?, scheduler_json = ?, persistence_json = ?, "
                "updated_at = ?, marker_run_id = ?, marker_revision = ?, marker_tier = ?, "
                "marker_at = ? WHERE id = 1",
                (snapshot.revision, snapshot.scheduler_state_json,
                 snapshot.persistence_state_json, _text(now),
                 *((None,) * 4 if m is None else (m.run_id, m.revision, m.tier, _text(m.at)))),
            )
        self._layout_current = True

    # --- reading ---------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The last committed revision (0 before the first commit)."""
        return int(self._read_one("read the revision",
                                  "SELECT revision FROM run_state WHERE id = 1"))

    def snapshot(self, *, after_seq: int = 0) -> Snapshot:
        """The whole canonical state, read in one transaction (the checkpoint's only source);
        with `after_seq`, only the posts after that one (what an appended checkpoint record
        holds: posts are never changed nor removed, so the rest is what was exported)."""
        with self._transaction("read a snapshot", write=False) as conn:
            run = conn.execute(
                "SELECT run_id, integrity_id FROM run WHERE id = 1").fetchone()
            aliases = tuple(r[0] for r in conn.execute("SELECT alias FROM aliases ORDER BY alias"))
            state = _run_state(conn)
            posts = _posts(conn, after_seq)
        return Snapshot(
            run_id=run[0], integrity_id=run[1], aliases=aliases, revision=state.revision,
            scheduler_state_json=state.scheduler_state_json,
            persistence_state_json=state.persistence_state_json, marker=state.marker,
            posts=posts,
        )

    def committed_state(self) -> CommittedState:
        """The run state and marker as last committed, read in one transaction without the
        thread: what `autodev status` and `read_on_disk` start from (cold start: a status of a
        long run read every post's text twice to count them)."""
        with self._transaction("read the run state", write=False) as conn:
            return _run_state(conn)

    def marker(self) -> Marker | None:
        with self._transaction("read the commit marker", write=False) as conn:
            return _marker(conn)


class CommittedState(NamedTuple):
    """The run state of the last revision and the marker committed with it."""

    revision: int
    scheduler_state_json: str
    persistence_state_json: str
    marker: Marker | None


def _run_state(conn: sqlite3.Connection) -> CommittedState:
    state = conn.execute(
        "SELECT revision, scheduler_json, persistence_json FROM run_state WHERE id = 1"
    ).fetchone()
    return CommittedState(int(state[0]), state[1], state[2], _marker(conn))


def _marker(conn: sqlite3.Connection) -> Marker | None:
    row = conn.execute("SELECT run_id, revision, tier, at FROM commit_marker WHERE id = 1"
                       ).fetchone()
    return None if row is None else Marker(row[0], int(row[1]), row[2], _time(row[3]))


def _write_revision(
    conn: sqlite3.Connection,
    revision: int,
    posts: Sequence[NewPost],
    scheduler_state_json: str,
    persistence_state_json: str,
    *,
    stamp: str,
    marker: tuple[str, str],
    taken_controls: Sequence[int],
    turn_inputs: Sequence[InputRecord],
) -> tuple[int, bool]:
    """The statements of one revision, inside the caller's transaction (C3): its posts (keyed,
    so a replay adds none twice), the controls it carries out, the turn inputs the store could
    not take before (B19), the run state and its marker. Returns (posts added, replayed)."""
    added = 0
    for index, post in enumerate(posts):
        cursor = conn.execute(
            "INSERT INTO posts (post_key, revision, at, participant, engine, text) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (post_key) DO NOTHING",
            (post.key or f"r{revision}.{index}", revision, _text(post.at),
             post.participant, post.engine, post.text),
        )
        added += max(cursor.rowcount, 0)
    for control in taken_controls:
        conn.execute(
            "UPDATE controls SET taken_at = ? WHERE id = ? AND taken_at IS NULL",
            (stamp, int(control)),
        )
    for record in turn_inputs:
        _save_turn_input(conn, record, stamp)
    # The run state and its marker are one row (layout 2): one statement, and it changes
    # nothing for a replay (a revision not above the stored one).
    marker_run, tier = marker
    replayed = conn.execute(
        "UPDATE run_state SET revision = ?, scheduler_json = ?, persistence_json = ?, "
        "updated_at = ?, marker_run_id = ?, marker_revision = ?, marker_tier = ?, "
        "marker_at = ? WHERE id = 1 AND revision < ?",
        (revision, scheduler_state_json, persistence_state_json, stamp, marker_run,
         revision, tier, stamp, revision),
    ).rowcount == 0
    if replayed:  # the run state is there and not below `revision`, or nothing is
        _scalar(conn, "SELECT revision FROM run_state WHERE id = 1")
    return added, replayed
