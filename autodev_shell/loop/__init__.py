"""The daemon loop's own parts (SPEC C2, C6, C7; docs/loop.md): `autodev_shell.runner`
drives them.

- `commits.py`: the runner's writes, one revision per step, the turn gate (B4-B9);
- `operator_commands.py`: the commands other processes queued (stop, pause, resume, say);
- `sleeper.py`: sleeping in slices with a heartbeat (C2, A19, A20);
- `logsink.py`: where the log lines go (C7).
"""
