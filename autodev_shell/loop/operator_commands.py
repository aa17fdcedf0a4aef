"""Commands queued for the daemon by other processes (SPEC C6): `autodev stop`, `pause`,
`resume` and `say` write rows in the store's control table; `Controls` reads them for the loop
(autodev_shell/runner.py), which turns each into an event.
"""

from __future__ import annotations

from collections import deque

from ..clock import Clock
from ..store.command_queue import ControlCommand
from ..store.run_store import Control, RunStore, StoreError


class Controls:
    """Commands queued by other processes (the store's control table). Reading one takes
    nothing: each is marked taken in the commit that carries it out, so a kill -9 at any moment
    loses none (an untaken control is read again by the next daemon)."""

    def __init__(self, store: RunStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.queue: deque[Control] = deque()
        self._seen = 0

    def poll(self) -> None:
        try:
            controls = self.store.pending_controls(after=self._seen)
        except StoreError:
            return  # a store that cannot be read now is read again at the next poll
        for control in controls:
            self._seen = max(self._seen, control.id)
            self.queue.append(control)

    def has(self, *commands: ControlCommand) -> bool:
        self.poll()
        return any(control.command in commands for control in self.queue)

    def take_all(self, command: ControlCommand) -> list[Control]:
        """Remove and return every queued `command`, leaving the others in order."""
        self.poll()
        taken = [item for item in self.queue if item.command == command]
        if taken:
            self.queue = deque(item for item in self.queue if item.command != command)
        return taken

    def take_first(self, *commands: ControlCommand) -> Control | None:
        """Remove and return the oldest queued control among `commands`, if any."""
        self.poll()
        for item in self.queue:
            if item.command in commands:
                self.queue.remove(item)
                return item
        return None

    def take(self) -> Control | None:
        self.poll()
        return self.queue.popleft() if self.queue else None
