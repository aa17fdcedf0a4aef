"""What `autodev status` shows, read without loading the scheduler or the write path
(SPEC C6, issue 13; docs/cli.md).

- `read.py`: a run folder read at once; `stored.py`: the stored scheduler fields;
- `replicas.py`: the replicas' health; `sharing.py`: the sharing status file.
"""
