"""The thread in the run store: its posts and the turn inputs built from it (SPEC C3, B19).

A part of `RunStore` (store/run_store.py): `NewPost` is what a revision commits, `Post` what
the thread reads back; a turn input is the prompt context computed for a parent input, bound to
that input's text (B19), stored verbatim for the core to decide on.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from .sql import StoreConnection, _check_aware, _text, _time, clean_text

if TYPE_CHECKING:  # loaded where used: `autodev status` reads no turn input (docs/performance.md)
    from autodev_core.control.turn_input import InputRecord


@attrs.frozen
class NewPost:
    """A post to commit. `key` makes the write idempotent: a replayed commit carrying the same
    key (say turn id + attempt) never adds the post twice. Empty → "r<revision>.<index>"."""

    participant: str = attrs.field(converter=clean_text)
    engine: str = attrs.field(converter=clean_text)
    text: str = attrs.field(converter=clean_text)
    at: datetime = attrs.field(validator=lambda _i, _a, v: _check_aware(v))
    key: str = attrs.field(default="", converter=clean_text)


@attrs.frozen
class Post:
    """A post as stored: its place in the thread (`seq`) and the revision that committed it."""

    seq: int
    revision: int
    key: str
    participant: str
    engine: str
    text: str
    at: datetime


class StoreThread(StoreConnection):
    """The posts and the turn inputs of one run's store."""

    def thread(self, *, after_seq: int = 0) -> tuple[Post, ...]:
        """The posts in thread order (those after `after_seq`, to read incrementally)."""
        with self._transaction("read the thread", write=False) as conn:
            return _posts(conn, after_seq)

    def post_count(self) -> int:
        """How many posts the thread holds, without reading them (`autodev status`)."""
        return int(self._read_one("count the posts", "SELECT COUNT(*) FROM posts"))

    # --- turn inputs (B19) ------------------------------------------------------------------

    def save_turn_input(self, record: InputRecord, *, now: datetime) -> None:
        """Persist the context assembled for a turn, bound to its parent input's text (B19).

        `record` comes from the core's `bind_input_context`; it replaces any earlier record of
        the same parent input.
        """
        if not record.parent_input_id:
            raise ValueError("a turn input record needs its parent input's id")
        with self._transaction("save a turn input") as conn:
            _save_turn_input(conn, record, _text(now))

    def load_turn_input(self, parent_input_id: str) -> InputRecord | None:
        """The record persisted for `parent_input_id`, verbatim, or None. Whether it is reused
        is the core's decision (`plan_turn_input`), never the store's."""
        with self._transaction("load a turn input", write=False) as conn:
            row = conn.execute(
                "SELECT parent_input_id, bound_text, context FROM turn_inputs "
                "WHERE parent_input_id = ?", (parent_input_id,),
            ).fetchone()
        if row is None:
            return None
        from autodev_core.control.turn_input import InputRecord

        return InputRecord(row[0], row[1], row[2])


def _save_turn_input(conn: sqlite3.Connection, record: InputRecord, stamp: str) -> None:
    conn.execute(
        "INSERT INTO turn_inputs (parent_input_id, bound_text, context, saved_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (parent_input_id) DO UPDATE SET "
        "bound_text = excluded.bound_text, context = excluded.context, "
        "saved_at = excluded.saved_at",
        (clean_text(record.parent_input_id), clean_text(record.bound_text),
         clean_text(record.context), stamp),
    )


def _posts(conn: sqlite3.Connection, after_seq: int) -> tuple[Post, ...]:
    rows = conn.execute(
        "SELECT seq, revision, post_key, participant, engine, text, at FROM posts "
        "WHERE seq > ? ORDER BY seq", (after_seq,),
    )
    return tuple(Post(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], _time(r[6])) for r in rows)
