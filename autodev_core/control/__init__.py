"""The run-state control plane (SPEC B1-B20): one pure decision per question about the
run's durable state (docs/control-plane.md).

`identity` which run is active (B1-B3); `persistence` whether a write is confirmed and
the next turn may start (B4-B9); `mutation` whether the run state may be written now
(B10-B12); `replicas` audit, restore, checkpoint and sync (B13-B17); `turn_input` a
turn's input, reused or recomputed (B18-B20), and `thread_window` the part of the thread
that input shows.
"""
