"""`autodev panel`'s web application (docs/panel.md): routes over the run's store, read-only, and
the control table, the way `autodev status|say|pause|resume|stop` use them.

See docs/panel.md for every view, the security model and the page contract.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from autodev_core.errors import AutodevError, ConfigError

from ..calls.capture import POST_MAX_BYTES
from ..calls.lanes import NoLaneError, read_lane
from ..status.report import status_json
from ..store.folder import open_existing, queue_clear, run_db
from ..store.runlock import daemon_holding
from ..story.panel_routes import timeline_routes
from .ansi import render_text
from .live import LANE_TAIL_BYTES, Hub
from .prompts import PROMPT_MAX_BYTES, PromptError, read_prompt, save_prompt
from .runclock import RunClock
from .security import Guard, allowed_hosts, host_label
from .store_reads import (
    FIRST_PAGE,
    MAX_PAGE,
    SEARCH_KINDS,
    SEARCH_MAX_CHARS,
    SEARCH_PAGE,
    RunReader,
)
from .view import status_view

STATIC_DIR: Final = Path(__file__).parent / "static"
#: A say's message: at most one post's bound (`adapters.POST_MAX_BYTES`, what the thread keeps
#: of any post); the form's URL encoding may triple it on the wire.
SAY_MAX_BYTES: Final = POST_MAX_BYTES
#: The daemon's commands that make no sense with no daemon to take them: queued now, they would
#: act on the next `autodev run` at its start (a stop queued today stops tomorrow's run).
NEEDS_DAEMON: Final = frozenset({"pause", "resume", "stop"})
#: SQLite's largest integer: a seq asked beyond it names no post (never an OverflowError).
SQLITE_MAX_INT: Final = 2**63 - 1


def markdown_post(post: dict[str, Any]) -> str:
    """One post as Markdown: `## ana via claude · 2026-12-07 14:30:05 UTC · revision 12` and
    its text, fenced (a fence one backtick longer than the longest run in the text)."""
    text = str(post["text"])
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    via = f" via {post['engine']}" if post.get("engine") else ""
    at = str(post["at"]).replace("T", " ")[:19]
    kind = " (said to the team)" if post.get("kind") == "message" else ""
    return (f"## {post['author']}{via}{kind} · {at} UTC · revision {post['revision']}\n\n"
            f"{fence}text\n{text}\n{fence}\n\n")


class TooLarge(Exception):
    pass


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


class Panel:
    """The state one panel process serves: the run, the team, the token, the hub."""

    def __init__(self, run_dir: Path, *, team_dir: Path | None, token: str,
                 read_only: bool) -> None:
        self.run_dir = run_dir
        self.team_dir = team_dir
        self.token = token
        self.read_only = read_only
        self.reader = RunReader(run_dir)
        self._cached_key: tuple[int | None, int, int] | None = None
        self._cached: tuple[Any, str, list[str]] | None = None
        self.clock = RunClock()
        self.hub = Hub(self.reader, self.status, self.participant_ids)
        self.templates = Environment(loader=PackageLoader("autodev_shell.panel", "templates"),
                                     autoescape=select_autoescape(default=True))

    # --- reading ----------------------------------------------------------------------------

    def participant_ids(self) -> list[str]:
        state = self._cached[0] if self._cached is not None else self.reader.scheduler_state()
        return [m.id for m in state.config.team] if state is not None else []

    def status(self) -> dict[str, Any]:
        """The `status` event: `status --json`'s facts and the page's view of them."""
        try:
            facts, zone, now = self.reader.status()
        except Exception as exc:  # said on the page, as `status` would say it; never a crash
            return {"facts": None, "view": {
                "status": "unknown", "error": str(exc), "daemon_running": False,
                "daemon": "daemon not running", "revision": None, "persistence": "",
                "gate": "", "participants": [], "limits": [], "outages": [], "usage": [],
                "now": datetime.now(UTC).isoformat()}}
        key = (self.reader.data_version(), self._size_of(self.reader.log_file),
               self._inode_of(self.reader.db))
        if key != self._cached_key or self._cached is None:
            # The stored state, the turn gate and the run log change only with a commit or a
            # log line: read again only then (the status facts are read every time: the lock
            # and the heartbeat's age change without a commit).
            self._cached = (self.reader.scheduler_state(), self.reader.gate(),
                            self.reader.notice_lines())
            self._cached_key = key
        state, gate, lines = self._cached
        daemon = facts["daemon"]
        beat = daemon.get("last_heartbeat")
        running = bool(daemon["running"])
        self.clock.observe(datetime.fromisoformat(beat) if beat else None, now,
                           running=running, pid=daemon.get("pid"))
        run_now, rate = self.clock.now(now, running=running)
        status = status_view(facts, run_now, zone, state, gate, lines)
        status["view"]["clock"] = {"run_now": run_now.astimezone(UTC).isoformat(),
                                   "rate": rate, "fast": self.clock.fast(),
                                   "measured": self.clock.measured()}
        return status

    @staticmethod
    def _size_of(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError:
            return -1

    @staticmethod
    def _inode_of(path: Path) -> int:
        try:
            return path.stat().st_ino
        except OSError:
            return -1

    def prompt_editing(self) -> str:
        """Why prompts cannot be edited here, or "" when they can."""
        if self.read_only:
            return "this panel is read-only (--read-only)"
        if self.team_dir is None:
            return "no team folder: start the panel with --team TEAM_DIR to edit prompts"
        return ""

    # --- routes -----------------------------------------------------------------------------

    def page(self, request: Request) -> Response:
        # The session's own values (the guard's): a read-only session sees a read-only page,
        # and the page holds the CSRF value derived from its session, never the secret.
        state = request.scope.get("state", {})
        read_only = self.read_only or bool(state.get("autodev_read_only", True))
        editing = ("this session is read-only (the read-only URL)"
                   if read_only and not self.read_only else self.prompt_editing())
        html = self.templates.get_template("index.html").render(
            run_dir=str(self.run_dir), read_only=read_only, csrf=state.get("autodev_csrf", ""),
            prompt_editing=editing, say_max=SAY_MAX_BYTES)
        return HTMLResponse(html)

    def api_status(self, request: Request) -> Response:
        try:
            facts, _zone, _now = self.reader.status()
        except AutodevError as exc:
            return _error(503, str(exc))
        return Response(status_json(facts) + "\n", media_type="application/json")

    async def events(self, request: Request) -> Response:
        last = request.headers.get("last-event-id") or request.query_params.get("after")
        revision = int(last) if last is not None and last.strip().isdigit() else None

        async def body() -> AsyncIterator[str]:
            async for text in self.hub.stream(revision, request.is_disconnected):
                yield text

        return StreamingResponse(body(), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    def thread(self, request: Request) -> Response:
        try:
            limit = min(max(int(request.query_params.get("limit", FIRST_PAGE)), 1), MAX_PAGE)
            before = request.query_params.get("before")
            # SQLite's integers are 64-bit: a `before` past them reads as their end.
            posts = (self.reader.posts_before(
                         max(min(int(before), SQLITE_MAX_INT), -SQLITE_MAX_INT), limit)
                     if before is not None else self.reader.newest_posts(limit))
        except ValueError:
            return _error(400, "before and limit must be whole numbers")
        return JSONResponse(posts)

    def search(self, request: Request) -> Response:
        """`GET /api/search?q=WORDS&author=ID&kind=post|message&before=SEQ&limit=N`: the whole
        thread searched in the store, newest first, a bounded page at a time (docs/panel.md)."""
        params = request.query_params
        words, author, kind = (params.get("q", "").strip(), params.get("author", ""),
                               params.get("kind", ""))
        if len(words) > SEARCH_MAX_CHARS:
            return _error(400, f"q: a search is at most {SEARCH_MAX_CHARS} characters, "
                               f"this one has {len(words)}")
        if kind not in SEARCH_KINDS:
            return _error(400, "kind: 'post', 'message' or nothing")
        if not (words or author or kind):
            return _error(400, "q, author or kind: nothing to search for")
        try:
            before = params.get("before")
            first = int(before) if before is not None else None
            limit = min(max(int(params.get("limit", SEARCH_PAGE)), 1), SEARCH_PAGE)
        except ValueError:
            return _error(400, "before and limit must be whole numbers")
        return JSONResponse(self.reader.search(words, author=author, kind=kind, before=first,
                                               limit=limit))

    def post(self, request: Request) -> Response:
        """`GET /api/post/SEQ`: one post whole (a permalink to a post the page does not hold)."""
        seq = request.path_params["seq"]
        found = self.reader.post(seq) if seq <= SQLITE_MAX_INT else None
        if found is None:
            return _error(404, f"post {seq} is not in this thread")
        return JSONResponse(found)

    def thread_markdown(self, request: Request) -> Response:
        """The whole thread as Markdown (issue 41 item 6), oldest first, read a page at a time
        so a long thread is never held whole: a heading per post (author, engine, the instant
        in UTC, revision) and its text in a fence longer than any backtick run in it."""

        def body() -> Iterator[str]:
            yield f"# Thread of {self.run_dir}\n\n"
            seq = 0
            while True:
                posts = self.reader.posts_after(seq, limit=MAX_PAGE)
                for post in posts:
                    yield markdown_post(post)
                    seq = post["seq"]
                if len(posts) < MAX_PAGE:
                    return

        return StreamingResponse(body(), media_type="text/markdown; charset=utf-8", headers={
            "content-disposition": 'attachment; filename="thread.md"'})

    def lane(self, request: Request) -> Response:
        participant = request.path_params["participant"]
        try:
            text = read_lane(self.run_dir / "lanes", participant)
        except ValueError as exc:
            return _error(404, str(exc))
        except NoLaneError as exc:
            return _error(404, str(exc))
        tail = text.encode("utf-8")[-LANE_TAIL_BYTES:].decode("utf-8", "replace")
        return JSONResponse({"participant": participant, "pieces": render_text(tail)})

    def get_prompt(self, request: Request) -> Response:
        why = "" if self.team_dir is not None else self.prompt_editing()
        if self.team_dir is None:
            return _error(404, why)
        try:
            text, etag, path = read_prompt(self.team_dir, request.path_params["participant"])
        except ConfigError as exc:
            return _error(404, str(exc))
        return JSONResponse({"text": text, "etag": etag, "path": str(path),
                             "editable": not (self.read_only or request.scope.get(
                                 "state", {}).get("autodev_read_only", True))},
                            headers={"etag": etag})

    async def put_prompt(self, request: Request) -> Response:
        if self.team_dir is None:
            return _error(404, self.prompt_editing())
        try:
            raw = await _body(request, PROMPT_MAX_BYTES * 6 + 1024)  # JSON escapes included
            text = json.loads(raw)["text"]
            if not isinstance(text, str):
                raise TypeError
        except TooLarge:
            return _error(413, f"The file is larger than {PROMPT_MAX_BYTES // 1024} KiB.")
        except (ValueError, KeyError, TypeError):
            return _error(400, 'The body must be JSON {"text": "..."}.')
        if_match = request.headers.get("if-match")
        if not if_match:
            return _error(428, "An If-Match header (the ETag the editor read) is needed.")
        participant = request.path_params["participant"]
        try:
            path = await run_in_threadpool(save_prompt, self.team_dir, participant, text,
                                           if_match)
        except PromptError as exc:
            extra = {"text": exc.text, "etag": exc.etag} if exc.status == 409 else {}
            return _error(exc.status, str(exc), **extra)
        except ConfigError as exc:
            return _error(404, str(exc))
        etag = (await run_in_threadpool(read_prompt, self.team_dir, participant))[1]
        applies = await run_in_threadpool(self.applies_from, participant)
        return JSONResponse({"saved": str(path), "backup": str(path) + ".bak", "etag": etag,
                             "applies_from": applies})

    def _enqueue(self, command: str, arg: str) -> int:
        """Queue `command` as `autodev say|pause|resume|stop` does (`cmd_control`, C6)."""
        store = open_existing(self.run_dir)
        try:
            return store.enqueue_control(command, arg, now=datetime.now(UTC))
        finally:
            store.close()

    def applies_from(self, participant: str) -> str:
        """From which turn a saved file counts: a running daemon reads the participant files
        again at each turn start (A14; docs/participants.md, Editing a running team), and a
        retried or hopped turn keeps the prompt it was first given (B19-B20)."""
        running, _pid = daemon_holding(run_db(self.run_dir))
        facts = self.hub.last_status["facts"] if self.hub.last_status else None
        calls = facts.get("calls") if facts else None
        at = f" (the run has made {calls} calls)" if calls is not None else ""
        if running:
            return (f"Saved. The running daemon reads it when the next turn starts: it applies "
                    f"from {participant}'s next fresh turn{at}; a retried turn keeps the prompt "
                    f"it was given (B19). An edit the loader refuses is one line in the log and "
                    f"in `autodev status`, and the run goes on with the last good team.")
        return (f"Saved. It applies from {participant}'s first fresh turn when `autodev run` "
                f"starts this run again{at}.")

    async def clear_limit(self, request: Request) -> Response:
        return await _clear_limit(self, request)

    async def control(self, request: Request) -> Response:
        command = request.url.path.rsplit("/", 1)[-1]
        arg = ""
        if command == "say":
            try:
                raw = await _body(request, SAY_MAX_BYTES * 3 + 1024)
            except TooLarge:
                return _error(413, f"The message is longer than {SAY_MAX_BYTES // 1024} KiB "
                              "(one post's bound).")
            form = parse_qs(raw.decode("utf-8", "surrogateescape"), keep_blank_values=True)
            arg = (form.get("message") or [""])[0]
            if len(arg.encode("utf-8", "surrogateescape")) > SAY_MAX_BYTES:
                return _error(413, f"The message is longer than {SAY_MAX_BYTES // 1024} KiB "
                              "(one post's bound).")
            if not arg.strip():
                return _error(400, "say needs a message.")
        running, _pid = await run_in_threadpool(daemon_holding, run_db(self.run_dir))
        if command in NEEDS_DAEMON and not running:
            return _error(409, f"The daemon is not running: {command} is not queued (it would "
                          "act on the next `autodev run` at its start).")
        try:
            control_id = await run_in_threadpool(self._enqueue, command, arg)
        except AutodevError as exc:
            return _error(503, str(exc))
        taken = "the daemon takes it" if running else (
            "the daemon is not running: it is taken when `autodev run` starts again")
        return JSONResponse({"queued": True, "id": control_id, "command": command,
                             "key": f"say:{control_id}" if command == "say" else None,
                             "daemon_running": running,
                             "message": f"{command}: queued for the run; {taken}"})


async def _clear_limit(panel: Panel, request: Request) -> Response:
    """`autodev limits clear ENGINE` from the page, through the store's `queue_clear`, as the CLI's
    does (the panel never imports the CLI); like pause, refused while no daemon runs
    (queued now it would lift the limit at the next `autodev run`'s start, whatever holds then)."""
    engine = request.path_params["engine"]
    running, _pid = await run_in_threadpool(daemon_holding, run_db(panel.run_dir))
    if not running:
        return _error(409, "The daemon is not running: clear is not queued (it would act on "
                      "the next `autodev run` at its start).")
    try:
        control_id = await run_in_threadpool(queue_clear, panel.run_dir, engine)
    except AutodevError as exc:
        return _error(400, str(exc))
    return JSONResponse({"queued": True, "id": control_id, "command": "clear",
                         "message": f"clear {engine}: queued for the run; the daemon takes it "
                                    "and decides afresh"})


def build_app(run_dir: Path, *, team_dir: Path | None, token: str, host: str, port: int,
              read_only: bool) -> tuple[Guard, Panel]:
    panel = Panel(run_dir, team_dir=team_dir, token=token, read_only=read_only)
    routes = [
        Route("/", panel.page, methods=["GET"]),
        Route("/api/status", panel.api_status, methods=["GET"]),
        Route("/events", panel.events, methods=["GET"]),
        Route("/api/thread", panel.thread, methods=["GET"]),
        Route("/api/thread.md", panel.thread_markdown, methods=["GET"]),
        Route("/api/search", panel.search, methods=["GET"]),
        Route("/api/post/{seq:int}", panel.post, methods=["GET"]),
        Route("/api/lane/{participant}", panel.lane, methods=["GET"]),
        Route("/api/prompt/{participant}", panel.get_prompt, methods=["GET"]),
        *timeline_routes(run_dir),  # docs/timeline.md
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    if not read_only:
        routes += [
            Route("/api/prompt/{participant}", panel.put_prompt, methods=["PUT"]),
            *(Route(f"/api/{name}", panel.control, methods=["POST"])
              for name in ("say", "pause", "resume", "stop")),
            Route("/api/clear/{engine}", panel.clear_limit, methods=["POST"]),
        ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        panel.hub.start()
        try:
            yield
        finally:
            await panel.hub.stop()
            panel.reader.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    hosts = allowed_hosts(host, port, host_label(token))
    return Guard(app, token=token, hosts=hosts, read_only=read_only), panel
