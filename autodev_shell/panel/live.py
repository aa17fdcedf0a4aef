"""The live side of the panel (docs/panel.md): one poller per panel process, fanned out to every
open page through a bounded queue each.

Every `POLL_SECONDS` the poller asks the store's read-only connection for `PRAGMA
data_version` (it changes only when another connection commits); on a change it reads the
posts after the last one it saw and the status. The status is read again at least every
`STATUS_SECONDS` whatever the store does (the daemon's lock, the heartbeat's age). Each lane
file is followed by inode and size: a rotation (`<id>.log` renamed to `.log.1`) drains the old
file's end, then starts the new one at 0.

The stream (`text/event-stream`): `status` events (the page's view), `post` events whose `id:`
is the post's revision, given on the last post of each revision only (so `Last-Event-ID`
always names a revision whose posts all arrived: a reconnect sends the posts after it, never
one twice), `lane` events (no `id:`, so they never move `Last-Event-ID`; every connection
starts each lane with its tail, `reset: true`), `resync` when a page fell too far behind
(its queue overflowed, or a reconnect missed more posts than one page) and `: ping` every
`PING_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

from ..calls.lanes import LANE_FILES
from .ansi import LaneDecoder, render_text
from .store_reads import FIRST_PAGE, MAX_PAGE, RunReader

POLL_SECONDS: Final = 0.25
STATUS_SECONDS: Final = 1.0
PING_SECONDS: Final = 15.0
#: How much of a lane a page gets when it connects, and keeps in memory per lane.
LANE_TAIL_BYTES: Final = 64 * 1024
#: A partial line (output without a newline yet) is shown after this long.
PARTIAL_SECONDS: Final = 0.5
#: Messages waiting for one page before it is told to resync.
QUEUE_SIZE: Final = 2000


def sse(event: str, data: Any, *, event_id: str | None = None) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {text}\n\n"


def post_events(posts: list[dict[str, Any]], *, last_whole: bool = True
                ) -> list[tuple[int, str]]:
    """(seq, SSE text) per post; `id:` on the last post of each revision — but the last of
    `posts` when `last_whole` is False (its revision goes on past this read)."""
    out = []
    for i, post in enumerate(posts):
        last_of_revision = (last_whole if i + 1 == len(posts)
                            else posts[i + 1]["revision"] != post["revision"])
        out.append((post["seq"], sse("post", post, event_id=str(post["revision"])
                                     if last_of_revision else None)))
    return out


class LaneFollower:
    """One lane file followed from its current end; keeps its last `LANE_TAIL_BYTES`."""

    def __init__(self, directory: Path, participant: str) -> None:
        self.participant = participant
        self.path = directory / f"{participant}.log"
        self.inode: int | None = None
        self.offset = 0
        self.total = 0  # bytes seen since the panel started following (the events' offsets)
        self.tail = b""
        self.decoder = LaneDecoder()
        self.partial_since: float | None = None
        self._seed()

    def _seed(self) -> None:
        try:
            stat = self.path.stat()
        except OSError:
            return
        rotated = self.path.with_name(self.path.name + ".1")
        older = b""
        if stat.st_size < LANE_TAIL_BYTES:
            with contextlib.suppress(OSError):
                older = _read_end(rotated, LANE_TAIL_BYTES - stat.st_size)
        self.tail = older + _read_end(self.path, LANE_TAIL_BYTES)
        self.inode, self.offset = stat.st_ino, stat.st_size
        self.decoder.feed(self.tail)
        self.decoder.flush()

    def poll(self) -> list[dict[str, Any]]:
        """New pieces since the last poll."""
        chunks: list[bytes] = []
        try:
            stat = self.path.stat()
        except OSError:
            stat = None
        if stat is not None and (stat.st_ino != self.inode or stat.st_size < self.offset):
            chunks += self._rotated()
            self.inode, self.offset = stat.st_ino, 0
        if stat is not None and stat.st_size > self.offset:
            data = _read_from(self.path, self.offset)
            self.offset += len(data)
            chunks.append(data)
        pieces: list[dict[str, Any]] = []
        for data in chunks:
            if data:
                self.total += len(data)
                self.tail = (self.tail + data)[-LANE_TAIL_BYTES:]
                pieces += self.decoder.feed(data)
        now = time.monotonic()
        if self.decoder.pending:
            if self.partial_since is None:
                self.partial_since = now
            elif now - self.partial_since >= PARTIAL_SECONDS:
                pieces += self.decoder.flush()
                self.partial_since = None
        else:
            self.partial_since = None
        return pieces

    def _rotated(self) -> list[bytes]:
        """The file was rotated (once or more) since the last poll: the rest of the file
        followed, wherever it went (`.log.1`, `.log.2`), then every newer rotated file whole.
        A file rotated away before it was read is lost to the page only (C8 bounds lanes)."""
        if self.inode is None:
            return []
        older = [self.path.with_name(f"{self.path.name}.{i}") for i in range(LANE_FILES - 1, 0, -1)]
        chunks: list[bytes] = []
        found = False
        for path in older:
            try:
                inode = path.stat().st_ino
            except OSError:
                continue
            with contextlib.suppress(OSError):
                if found:
                    chunks.append(_read_from(path, 0))
                elif inode == self.inode:
                    found = True
                    chunks.append(_read_from(path, self.offset))
        return chunks

    def snapshot(self) -> dict[str, Any]:
        """The lane's tail as a page starts it; a partial line not yet sent live is left for
        the live events (it would show twice)."""
        text = self.tail.decode("utf-8", "replace")
        pending = self.decoder.pending_text
        if pending and text.endswith(pending):
            text = text[: len(text) - len(pending)]
        return {"participant": self.participant, "reset": True, "offset": self.total,
                "pieces": render_text(text)}


def _read_end(path: Path, count: int) -> bytes:
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - count))
        return handle.read()


def _read_from(path: Path, offset: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(offset)
        return handle.read(4 * 1024 * 1024)


class Client:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[int, str]] = asyncio.Queue(QUEUE_SIZE)
        self.overflowed = False

    def put(self, seq: int, text: str) -> None:
        if self.overflowed:
            return
        try:
            self.queue.put_nowait((seq, text))
        except asyncio.QueueFull:
            self.overflowed = True
            with contextlib.suppress(asyncio.QueueFull):
                self.queue.put_nowait((0, ""))  # wakes the stream to say resync


class Hub:
    """The poller and the set of open pages."""

    def __init__(self, reader: RunReader, status: Callable[[], dict[str, Any]],
                 participants: Callable[[], list[str]]) -> None:
        self.reader = reader
        self.status_of = status
        self.participants_of = participants
        self.clients: set[Client] = set()
        self.last_status: dict[str, Any] | None = None
        self.last_status_text = ""
        self.last_seq = reader.last_seq()
        self.lanes: dict[str, LaneFollower] = {}
        self._version: int | None = None
        self._store_file = self._identity()
        self._status_at = 0.0
        self._task: asyncio.Task[None] | None = None
        #: Held while a tick runs and while a page subscribes and takes its snapshot, so that
        #: every message is either in the snapshot or in the page's queue, never both.
        self._lock = asyncio.Lock()

    def start(self) -> None:
        self._follow_lanes()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _follow_lanes(self) -> None:
        names = set(self.participants_of())
        with contextlib.suppress(OSError):
            names |= {p.name[:-4] for p in self.reader.lanes_dir.glob("*.log")}
        for name in sorted(names):
            if name not in self.lanes:
                self.lanes[name] = LaneFollower(self.reader.lanes_dir, name)

    def broadcast(self, seq: int, text: str) -> None:
        for client in list(self.clients):
            client.put(seq, text)

    async def _run(self) -> None:
        while True:
            async with self._lock:
                try:
                    sent = await asyncio.to_thread(self.tick)
                except Exception:  # a bad read is retried at the next tick; the stream stays up
                    sent = []
                for seq, text in sent:
                    self.broadcast(seq, text)
            await asyncio.sleep(POLL_SECONDS)

    def _identity(self) -> tuple[int, int] | None:
        try:
            info = self.reader.db.stat()
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def tick(self) -> list[tuple[int, str]]:
        """One poll: the messages it broadcast (the tests call it directly)."""
        sent: list[tuple[int, str]] = []
        identity = self._identity()
        if identity != self._store_file:
            # The store file was replaced (`autodev restore`, B14) or is away meanwhile: read
            # the new one from its start, and every page starts its thread again.
            self._store_file = identity
            self.reader.reset()
            self._version = None
            self.last_seq = self.reader.last_seq()
            sent.append((0, sse("resync", {"reason": "the run store was replaced"})))
        version = self.reader.data_version()
        changed = version != self._version
        self._version = version
        if changed:
            posts = self.reader.posts_after(self.last_seq, limit=MAX_PAGE)
            full = len(posts) >= MAX_PAGE
            last_whole = True
            if full:
                # The read may end inside a revision: its posts wait for the next read, so
                # that an `id:` (a page's Last-Event-ID) never names a revision not all sent.
                # A revision larger than a whole read goes out in parts, with no `id:` until
                # its end.
                cut = [p for p in posts if p["revision"] != posts[-1]["revision"]]
                if cut:
                    posts = cut
                else:
                    last_whole = False
            for seq, text in post_events(posts, last_whole=last_whole):
                sent.append((seq, text))
                self.last_seq = seq
            if full:
                # More may wait than one read takes (a burst of commits between two polls):
                # read on at the next tick, whether or not anything is committed meanwhile.
                self._version = None
        now = time.monotonic()
        if changed or now - self._status_at >= STATUS_SECONDS:
            self._status_at = now
            # Each part on its own: posts already read are sent whatever the status does.
            with contextlib.suppress(Exception):
                status = self.status_of()
                view = status["view"]
                clock = view.get("clock") or {}
                # The run's now moves on every read: only a change of its rate is news (the
                # page moves the clock on by itself between status events).
                comparable = json.dumps({**{k: v for k, v in view.items()
                                            if k not in ("now", "clock")},
                                         "rate": f"{clock.get('rate', 1.0):.2g}",
                                         "fast": clock.get("fast"),
                                         "measured": clock.get("measured")},
                                        sort_keys=True, default=str)
                if comparable != self.last_status_text:
                    self.last_status_text = comparable
                    self.last_status = status
                    sent.append((0, sse("status", status)))
            with contextlib.suppress(Exception):
                self._follow_lanes()
        for name, lane in self.lanes.items():
            try:
                pieces = lane.poll()
            except Exception:
                continue
            if pieces:
                sent.append((0, sse("lane", {"participant": name, "reset": False,
                                             "offset": lane.total, "pieces": pieces})))
        return sent

    async def stream(self, last_revision: int | None,
                     disconnected: Callable[[], Any]) -> AsyncIterator[str]:
        """One page's event stream: where it resumes, then live until it goes."""
        client = Client()
        async with self._lock:
            self.clients.add(client)
            status = self.last_status or await asyncio.to_thread(self.status_of)
            if last_revision is None:
                posts = await asyncio.to_thread(self.reader.newest_posts, FIRST_PAGE)
            else:
                posts = await asyncio.to_thread(self.reader.posts_after_revision,
                                                last_revision, MAX_PAGE + 1)
                newest = await asyncio.to_thread(self.reader.last_revision)
            lanes = [lane.snapshot() for lane in self.lanes.values()]
        try:
            yield "retry: 2000\n\n"
            yield sse("status", status)
            if len(posts) > MAX_PAGE:
                yield sse("resync", {"reason": "more posts than one page since you left"})
                return
            if last_revision is not None and last_revision > newest:
                # The page has posts this store does not (restored from an older checkpoint
                # while the panel was down, B14): it starts afresh.
                yield sse("resync", {"reason": "the run store is behind what this page shows"})
                return
            sent_seq = 0
            for seq, text in post_events(posts):
                sent_seq = seq
                yield text
            for lane in lanes:
                yield sse("lane", lane)
            while True:
                try:
                    seq, text = await asyncio.wait_for(client.queue.get(), PING_SECONDS)
                except TimeoutError:
                    if await disconnected():
                        return
                    yield ": ping\n\n"
                    continue
                if client.overflowed:
                    yield sse("resync", {"reason": "this page fell behind"})
                    return
                if seq and seq <= sent_seq:
                    continue  # already sent by the catch-up above
                if seq:
                    sent_seq = seq
                yield text
                if text.startswith("event: resync"):
                    return  # the page starts again on a fresh stream
        finally:
            self.clients.discard(client)
