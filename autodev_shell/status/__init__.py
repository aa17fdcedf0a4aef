"""What `autodev status` shows, read without loading the scheduler or the write path
(SPEC C6, docs/performance.md; docs/cli.md).

- `read.py`: a run folder read at once; `stored.py`: the stored scheduler fields;
- `replica_status.py`: the replicas' health; `sharing.py`: the sharing status file.
"""
