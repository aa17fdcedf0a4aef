"""Knowing a run's state reached durable storage (SPEC B4-B9, B12-B16, C3;
docs/store.md, docs/control-plane.md).

- `writes.py`: `Durability`, persisting a revision as the core decides;
- `checkpoint.py`: the checkpoint and shadow files; `frames.py`: their framed
  records; `shadow_file.py`: the shadow file as a daemon keeps it;
- `on_disk.py`: what a store and its shadow hold, read without writing.
"""
