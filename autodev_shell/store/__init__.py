"""The run store: one SQLite file per run (SPEC C2, C3, B4-B9; docs/store.md).

- `run_store.py`: `RunStore`, what the daemon and the short commands open;
- `sql.py`: the connection, its pragmas and checks; `layout.py`: the schema and its
  migrations; `thread.py`: posts; `revisions.py`: one transaction per revision;
  `command_queue.py`: the queued commands and call processes; `diagnose.py`: what a
  damaged file is; `runlock.py`: one daemon per run (C4).

Kept light (no names imported here): `autodev status` reads `layout` and `sql` without
loading the rest (docs/performance.md).
"""
