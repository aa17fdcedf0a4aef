"""autodev's imperative shell: carries out the core's effects and reports what happened.

It spawns provider CLIs, sleeps in slices, writes SQLite and files, and turns outcomes into
events for `autodev_core`. It holds no policy (SPEC 0.2).
"""
