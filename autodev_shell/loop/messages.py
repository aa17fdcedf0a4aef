"""User messages in the daemon loop (SPEC C6, A19, A30; docs/loop.md "Controls").

`autodev say` queues a row in the store's control table; this module is the one place the loop
turns such rows into posts. A message is posted as soon as the loop sees it — between steps, in
the middle of a call, during a pause or any wait — as one `MessageArrived` step whose revision
holds the posts, in the order said. What a message changes (a failure wait ends, A30; a limit
wait goes on, A19) is the core's decision, never this module's.

The loop's queue of events is shared: a message the loop took just as a call ended waits there
behind the call's end, and `held` takes it back out so it is posted before anything said later.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Final

import attrs

from autodev_core.scheduler import Event, MessageArrived

from ..clock import Clock
from ..store.run_store import Control, NewPost
from .operator_commands import Controls

#: The participant name user messages are posted under.
USER: Final = "user"


@attrs.frozen
class Todo:
    """An event for the loop to apply, with what its revision carries: posts (a call's, a
    user message's) and the ids of the queued controls it carries out (marked taken in the
    same transaction)."""

    event: Event
    posts: tuple[NewPost, ...] = ()
    taken: tuple[int, ...] = ()


def message_step(says: Iterable[Control], now: datetime) -> Todo:
    """User messages as one `MessageArrived`, committed with their posts. Each post is keyed
    by its control, so however often a crash makes it be carried out, it is posted once."""
    says = tuple(says)
    posts = tuple(
        NewPost(participant=USER, engine="", text=c.arg.strip(), at=now, key=f"say:{c.id}")
        for c in says
        if c.arg.strip()
    )
    return Todo(MessageArrived(now=now), posts, tuple(c.id for c in says))


class Messages:
    """The loop's part for user messages (`Runner.messages`): it reads `say` from the control
    queue, holds none of its own, and posts through the loop's own step (`apply`)."""

    def __init__(self, *, controls: Controls, clock: Clock, queue: deque[Todo],
                 apply: Callable[[Todo], None]) -> None:
        self.controls = controls
        self.clock = clock
        self.queue = queue  # the loop's queue of events, where a taken message may wait
        self.apply = apply  # one step and one revision, with its follow-ups queued

    def said(self) -> bool:
        """Whether a message is queued and not yet taken."""
        return self.controls.has("say")

    def arrived(self, now: datetime, first: Control | None = None) -> Todo:
        """Every message queued (after `first`, already taken from the queue) as one step: the
        step a message makes, which ends a wait that ends on one (A30)."""
        return message_step([*([first] if first else []), *self.controls.take_all("say")], now)

    def take(self, now: datetime) -> Todo | None:
        """Every message queued as one step, or None when there is none."""
        says = self.controls.take_all("say")
        return message_step(says, now) if says else None

    def held(self) -> list[Todo]:
        """The messages the loop took and holds behind a step's follow-ups, taken out of its
        queue (a message said as a call ended, before the call's end was carried out)."""
        waiting = [todo for todo in self.queue if isinstance(todo.event, MessageArrived)]
        for todo in waiting:
            self.queue.remove(todo)
        return waiting

    def post_now(self) -> None:
        """Post messages at once, in the middle of a call or a wait that a message does not end
        (A19): one step and one revision each, whose follow-ups run after it. First those the
        loop holds behind a step's follow-ups (said as a call ended, before its end was carried
        out: else they waited for the whole next call or wait, and one said during it was posted
        first), then those queued since, in the order said."""
        for todo in self.held():
            self.apply(todo)
        queued = self.take(self.clock.now())
        if queued is not None:
            self.apply(queued)
