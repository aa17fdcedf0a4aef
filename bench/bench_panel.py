"""The panel (issue 23): how fast a commit reaches open pages, and what a long thread costs it.

The real `autodev panel` command serves copies of a run made by `autodev demo`, whose threads
are grown through the store's own API (`RunStore.commit`, one post per revision, as the daemon
commits them; sync off: setup, not measured) to 100 and to 100,000 posts.

- **Commit → visible.** 20 clients hold the events stream open (`GET /events`, as EventSource
  does) while posts are committed to the store one at a time, a quarter of a second apart; each
  client notes when each post's event arrives. With Chromium and Playwright installed, one more
  client is a real page: a MutationObserver notes when each post's element is added to the
  thread. The figure is the 95th percentile of (arrival - end of the commit) over every client
  and post: the panel notices a commit by polling `PRAGMA data_version` (docs/panel.md), so the
  poll's period is what it is shown beside. Commits come at jittered moments (a steady period
  equal to the poll's would lock their phases). Target ≤ 1 s.
- **RSS independent of the thread.** The panel's resident set once it has served the page, the
  first page of the thread, the status and a few seconds of the events stream, on the
  100,000-post run over the 100-post run (median over fresh panel processes, interleaved).
  Target ≤ 1.2.
- **First page.** `GET /` (the page), `GET /api/thread` (the first page, no `before`) and
  `GET /events` until its first 50 posts are in (what an opened page shows first), on the
  100,000-post run over the 100-post run, the two panels running side by side, requests
  interleaved, median of per-round ratios (the worst of the three is the figure). Target ≤ 3×.
- **A click during a burst** (issue 41). A real page follows the thread while 20,000 posts are
  committed as fast as the store takes them (500 per commit); a click lands on the page every
  100 ms. The figure is the 95th percentile of each click's input delay (from the event's
  creation to its handler: how long the page's main thread kept it waiting), beside the same
  page's delay with nothing arriving (the baseline, measured in the same run). Target ≤ 100 ms.
  Also said: the posts the thread's DOM holds at the end (bounded at 1,000) and how long the
  page took to show the burst's last post.
- **Search the whole thread** (issue 41). `GET /api/search` on the 100,000-post run, through
  the real panel, for words no post holds (the worst: every post is read, and the answer is
  empty): words of ASCII (SQLite's `LIKE`) and words with a letter past ASCII (the case folded
  by Python, one call per post), beside reading the whole thread (every post's columns,
  `SELECT … FROM posts`, in this process over the same file), interleaved round by round,
  median of per-round ratios. The figure a user waits for is the request's time, in ms.

    python bench/bench_panel.py [--quick] [--burst-only] [--search-only]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "browser"))  # the panel's process helpers
sys.path.insert(1, str(HERE.parent / "tests"))  # and the `helpers` package they import

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    Panel,
    launch_chromium,
    panel_missing,
    read_sse,
)

from autodev_shell.store.run_store import NewPost, RunStore  # noqa: E402

TARGET_LATENCY_S = 1.0
TARGET_RSS_RATIO = 1.2
TARGET_PAGE_RATIO = 3.0
TARGET_CLICK_MS = 100.0
#: A search of the whole thread against reading it whole (the floor of any reading of it).
TARGET_SEARCH_RATIO = 1.0
#: Words no post of the bench holds: ASCII (LIKE), and with a letter past ASCII (Python's fold).
SEARCH_WORDS = {"plain": "zebra crossing", "folded": "zebra über"}
#: Rounds of the search timing: (quick, full).
SEARCH_ROUNDS = (5, 15)
#: Posts of the burst, posts per commit, and the period of the clicks during it.
BURST_POSTS, BURST_CHUNK, CLICK_EVERY = 20_000, 500, 0.1
SMALL, LARGE = 100, 100_000
CLIENTS = 20
#: Mean seconds between two commits (jittered ±50%) while the clients listen; posts committed
#: per latency round.
COMMIT_EVERY, LATENCY_POSTS = 0.25, (24, 60)
#: Rounds of the first-page timing and fresh panels for the RSS: (quick, full).
PAGE_ROUNDS, RSS_ROUNDS = (9, 31), (2, 3)
POST = "Patch: retry the flaky upload with a bounded backoff; the helper is renamed. " * 4


def demo_run(directory: Path) -> Path:
    """A run made by `autodev demo` (the real loop on stand-ins): its state and lanes."""
    done = subprocess.run([sys.executable, "-m", "autodev_shell.cli", "demo", "--dir",
                           str(directory / "demo")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"autodev demo failed: {done.stderr[-500:]}")
    return directory / "demo" / "run"


def grow(base: Path, target: Path, posts: int) -> Path:
    """A copy of the run `base` whose thread holds `posts` posts, one per revision."""
    shutil.copytree(base, target)
    store = RunStore.open(target / "run.db", check=False)
    store._conn.execute("PRAGMA synchronous = OFF")  # the bench's own copy, never a run's
    try:
        state = store.committed_state()
        revision, have = state.revision, store.post_count()
        now = datetime.now(UTC)
        for _ in range(posts - have):
            revision += 1
            store.commit(revision, (NewPost("rui", "codex", f"{revision}: {POST}", now,
                                            key=f"bench-{revision}"),),
                         state.scheduler_state_json,
                         persistence_state_json=state.persistence_state_json, now=now)
        assert store.post_count() == posts, (store.post_count(), posts)
    finally:
        store.close()
    return target


def _warm(panel: Panel) -> None:
    """What an opened page asks for: the page, its first page of the thread, the status, and
    a few seconds of the events stream."""
    for path in ("/", "/api/thread?limit=50", "/api/status"):
        answer = panel.request("GET", path)
        if answer.status != 200:
            raise RuntimeError(f"{path}: {answer}")
    read_sse(panel, seconds=3)


def rss(small: Path, large: Path, rounds: int, logs: Path) -> dict[str, float]:
    kib: dict[str, list[int]] = {"small": [], "large": []}
    for number in range(rounds):
        order = [("small", small), ("large", large)]
        for name, run in order if number % 2 == 0 else order[::-1]:
            panel = Panel(run, log=logs / f"rss-{name}.stderr").start()
            try:
                _warm(panel)
                kib[name].append(panel.rss_kib())
            finally:
                panel.stop()
    small_kib = statistics.median(kib["small"])
    large_kib = statistics.median(kib["large"])
    return {"small_kib": small_kib, "large_kib": large_kib, "ratio": large_kib / small_kib}


def first_page(small: Path, large: Path, rounds: int, logs: Path) -> dict[str, Any]:
    panels = {"small": Panel(small, log=logs / "page-small.stderr").start(),
              "large": Panel(large, log=logs / "page-large.stderr").start()}
    routes = {"page": "/", "thread": "/api/thread?limit=50", "events": "/events"}
    seconds: dict[tuple[str, str], list[float]] = {(r, n): [] for r in routes for n in panels}
    ratios: dict[str, list[float]] = {r: [] for r in routes}
    try:
        for panel in panels.values():
            _warm(panel)
        for number in range(rounds):
            for route, path in routes.items():
                took: dict[str, float] = {}
                names = ["small", "large"] if number % 2 == 0 else ["large", "small"]
                for name in names:
                    began = time.perf_counter()
                    if route == "events":  # until the stream's first page of posts is in
                        events = read_sse(panels[name], seconds=30, until=_first_page_in)
                        if not _first_page_in(events):
                            raise RuntimeError(f"/events: {len(events)} events")
                    else:
                        answer = panels[name].request("GET", path)
                        if answer.status != 200:
                            raise RuntimeError(f"{path}: {answer}")
                    took[name] = time.perf_counter() - began
                    seconds[(route, name)].append(took[name])
                ratios[route].append(took["large"] / took["small"])
    finally:
        for panel in panels.values():
            panel.stop()
    out: dict[str, Any] = {}
    for route in routes:
        out[route] = {"small_ms": statistics.median(seconds[(route, "small")]) * 1e3,
                      "large_ms": statistics.median(seconds[(route, "large")]) * 1e3,
                      "ratio": statistics.median(ratios[route])}
    out["worst"] = max(routes, key=lambda r: out[r]["ratio"])
    out["paths"] = routes
    return out


#: Posts an opened page gets first from the events stream (docs/panel.md: the newest 50).
FIRST_PAGE_POSTS = 50


def _first_page_in(events: list[dict[str, str]]) -> bool:
    return sum(e.get("event") == "post" for e in events) >= FIRST_PAGE_POSTS


class _Listener(threading.Thread):
    """One events-stream client: the wall-clock arrival of each post's event, by revision."""

    def __init__(self, panel: Panel, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.panel, self.stop_event = panel, stop
        self.arrived: dict[int, float] = {}
        self.ready = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        import http.client

        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.panel.port, timeout=60)
            conn.request("GET", "/events", headers={"Cookie": self.panel.cookie(),
                                                     "Accept": "text/event-stream"})
            answer = conn.getresponse()
            if answer.status != 200:
                raise RuntimeError(f"/events: {answer.status}")
            self.ready.set()
            buffer = b""
            while not self.stop_event.is_set():
                chunk = answer.read1(65536)
                if not chunk:
                    break
                now = time.time()
                buffer += chunk
                *blocks, buffer = buffer.replace(b"\r\n", b"\n").split(b"\n\n")
                for block in blocks:
                    lines = block.decode("utf-8", "replace").splitlines()
                    if "event: post" in lines:
                        data = "\n".join(x[5:].lstrip() for x in lines
                                         if x.startswith("data:"))
                        self.arrived.setdefault(int(json.loads(data)["revision"]), now)
            conn.close()
        except Exception as exc:  # reported by `latency`
            self.error = repr(exc)
            self.ready.set()


_OBSERVER = """() => {
  window.__seen = {};
  const note = node => {
    if (node.nodeType === 1 && node.matches && node.matches('.post[data-revision]')) {
      window.__seen[node.dataset.revision] = performance.timeOrigin + performance.now();
    }
  };
  new MutationObserver(records => records.forEach(r => r.addedNodes.forEach(note)))
    .observe(document.querySelector('#thread'), {childList: true, subtree: true});
}"""


def latency(run: Path, posts: int, logs: Path, *, browser: bool = True) -> dict[str, Any]:
    panel = Panel(run, log=logs / "latency.stderr").start()
    stop = threading.Event()
    listeners = [_Listener(panel, stop) for _ in range(CLIENTS)]
    committed: dict[int, float] = {}
    page_seen: dict[int, float] = {}
    pw = chromium = None
    try:
        for listener in listeners:
            listener.start()
        for listener in listeners:
            listener.ready.wait(60)
            if listener.error:
                raise RuntimeError(listener.error)
        page = None
        if browser and CHROMIUM is not None:
            try:
                from playwright.sync_api import sync_playwright
            except ImportError:
                pass
            else:
                pw = sync_playwright().start()
                chromium = launch_chromium(pw)
                page = chromium.new_page()
                page.goto(panel.url)
                page.wait_for_selector("#thread")
                page.evaluate(_OBSERVER)
        time.sleep(1.0)  # every client's stream is open and past its first events
        store = RunStore.open(run / "run.db", check=False)
        try:
            state = store.committed_state()
            revision = state.revision
            # Commits at irregular moments: a steady period equal to the panel's poll would lock
            # their phases and show one fixed delay.
            jitter = random.Random(23)
            for _ in range(posts):
                revision += 1
                now = datetime.now(UTC)
                store.commit(revision, (NewPost("rui", "codex", f"{revision}: {POST}", now,
                                                key=f"live-{revision}"),),
                             state.scheduler_state_json,
                             persistence_state_json=state.persistence_state_json, now=now)
                committed[revision] = time.time()
                time.sleep(jitter.uniform(0.5, 1.5) * COMMIT_EVERY)
        finally:
            store.close()
        time.sleep(2.0)
        if page is not None:
            seen = page.evaluate("window.__seen")
            page_seen = {int(k): float(v) / 1e3 for k, v in seen.items()}
    finally:
        stop.set()
        if chromium is not None:
            chromium.close()
        if pw is not None:
            pw.stop()
        panel.stop()
    delays = [listener.arrived[r] - at for listener in listeners
              for r, at in committed.items() if r in listener.arrived]
    missing = len(committed) * len(listeners) - len(delays)
    page_delays = [page_seen[r] - at for r, at in committed.items() if r in page_seen]
    return {
        "posts": len(committed), "clients": len(listeners), "missing": missing,
        "p50": _quantile(delays, 0.5), "p95": _quantile(delays, 0.95), "max": max(delays),
        "page_posts": len(page_delays),
        "page_p95": _quantile(page_delays, 0.95) if page_delays else None,
        "page_missing": len(committed) - len(page_delays) if page_seen or browser else None,
    }


_CLICKS = """() => {
  window.__delays = [];
  document.addEventListener('click', e => {
    if (e.target.id === 'thread-title') window.__delays.push(performance.now() - e.timeStamp);
  }, true);
}"""


def burst(base: Path, work: Path, posts: int = BURST_POSTS) -> dict[str, Any] | None:
    """Click input delay on a real page while `posts` posts arrive, and the idle baseline."""
    if CHROMIUM is None:
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    run = grow(base, work / "burst", SMALL)
    panel = Panel(run, log=work / "burst.stderr").start()
    pw = sync_playwright().start()
    chromium = launch_chromium(pw)
    try:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        page.goto(panel.url)
        page.wait_for_function(
            "() => document.querySelector('#connection').textContent.includes('live')")
        page.evaluate(_CLICKS)

        def clicks(until: Callable[[], bool]) -> list[float]:
            page.evaluate("window.__delays = []")
            while not until():
                page.click("#thread-title")
                time.sleep(CLICK_EVERY)
            return [float(x) for x in page.evaluate("window.__delays")]

        rounds = iter(range(20))
        idle = clicks(lambda: next(rounds, None) is None)
        done = threading.Event()
        last: list[int] = []

        def commit_all() -> None:
            store = RunStore.open(run / "run.db", check=False)
            try:
                state = store.committed_state()
                revision = state.revision
                for start in range(0, posts, BURST_CHUNK):
                    revision += 1
                    now = datetime.now(UTC)
                    store.commit(revision, tuple(
                        NewPost("rui", "codex", f"{revision}.{i}: {POST}", now,
                                key=f"burst-{revision}-{i}")
                        for i in range(min(BURST_CHUNK, posts - start))),
                        state.scheduler_state_json,
                        persistence_state_json=state.persistence_state_json, now=now)
                last.append(revision)
            finally:
                store.close()
                done.set()

        began = time.perf_counter()
        writer = threading.Thread(target=commit_all, daemon=True)
        writer.start()
        shown = ("() => { const t = document.querySelector('#thread');"
                 " const p = t.lastElementChild; return p ? +p.dataset.revision : 0; }")
        deadline = time.monotonic() + 300
        during = clicks(lambda: (done.is_set() and bool(last)
                                 and page.evaluate(shown) >= last[0])
                        or time.monotonic() > deadline)
        caught_up = time.perf_counter() - began
        dom = int(page.evaluate("document.querySelectorAll('#thread .post').length"))
        writer.join(60)
    finally:
        chromium.close()
        pw.stop()
        panel.stop()
    return {"posts": posts, "clicks": len(during), "idle_p95_ms": _quantile(idle, 0.95),
            "p95_ms": _quantile(during, 0.95), "max_ms": max(during), "dom_posts": dom,
            "caught_up_s": caught_up,
            "ratio": _quantile(during, 0.95) / max(_quantile(idle, 0.95), 0.1)}


def search(large: Path, rounds: int, logs: Path) -> dict[str, Any]:
    """`GET /api/search` on the 100,000-post run for words no post holds (every post read),
    beside reading every post of the thread in this process (same file), interleaved."""
    import sqlite3
    from urllib.parse import quote

    panel = Panel(large, log=logs / "search.stderr").start()
    conn = sqlite3.connect(f"file:{large / 'run.db'}?mode=ro", uri=True)
    seconds: dict[str, list[float]] = {"read": [], **{k: [] for k in SEARCH_WORDS}}
    ratios: dict[str, list[float]] = {k: [] for k in SEARCH_WORDS}
    posts = int(conn.execute("SELECT COUNT(*) FROM posts").fetchone()[0])

    def read_all() -> None:
        conn.execute("SELECT seq, revision, post_key, participant, engine, text, at "
                     "FROM posts ORDER BY seq").fetchall()

    def ask(words: str) -> None:
        answer = panel.request("GET", f"/api/search?q={quote(words)}")
        if answer.status != 200 or answer.json()["posts"] or answer.json()["next"] is not None:
            raise RuntimeError(f"/api/search {words!r}: {answer}")

    try:
        _warm(panel)
        for words in SEARCH_WORDS.values():  # the first of each: the pages into the cache
            ask(words)
        read_all()
        for number in range(rounds):
            for name, words in SEARCH_WORDS.items():
                took: dict[str, float] = {}
                steps: list[tuple[str, Callable[[], None]]] = [
                    (name, lambda w=words: ask(w)), ("read", read_all)]
                for key, run in steps if number % 2 == 0 else steps[::-1]:
                    began = time.perf_counter()
                    run()
                    took[key] = time.perf_counter() - began
                    seconds[key].append(took[key])
                ratios[name].append(took[name] / took["read"])
    finally:
        conn.close()
        panel.stop()
    out: dict[str, Any] = {"posts": posts, "rounds": rounds,
                           "read_ms": statistics.median(seconds["read"]) * 1e3}
    for name in SEARCH_WORDS:
        out[name] = {"ms": statistics.median(seconds[name]) * 1e3,
                     "ratio": statistics.median(ratios[name])}
    return out


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(quick: bool = False, directory: Path | None = None) -> dict[str, Any]:
    reason = panel_missing()
    if reason:
        raise RuntimeError(reason)
    work = Path(tempfile.mkdtemp(prefix="autodev-bench-panel-", dir=directory))
    try:
        base = demo_run(work)
        began = time.perf_counter()
        small = grow(base, work / "small", SMALL)
        large = grow(base, work / "large", LARGE)
        built = time.perf_counter() - began
        index = 0 if quick else 1
        result = {
            "rss": rss(small, large, RSS_ROUNDS[index], work),
            "page": first_page(small, large, PAGE_ROUNDS[index], work),
            "latency": latency(grow(base, work / "live", SMALL), LATENCY_POSTS[index], work),
            "burst": burst(base, work),
            "search": search(large, SEARCH_ROUNDS[index], work),
            "built_s": built,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def report(m: dict[str, Any]) -> list[str]:
    """The rows for docs/performance.md's summary table."""
    lat, rss_, page = m["latency"], m["rss"], m["page"]
    worst = page[page["worst"]]
    seen = (f"; a real page (Chromium, MutationObserver): p95 {lat['page_p95']:.3f} s"
            if lat["page_p95"] is not None else "")
    verdict = "met" if lat["p95"] <= TARGET_LATENCY_S and (
        lat["page_p95"] is None or lat["page_p95"] <= TARGET_LATENCY_S) and not lat["missing"] \
        else "**missed**"
    return [
        f"| 10. panel: commit → shown, {lat['clients']} clients on the events stream, "
        f"{lat['posts']} posts about a quarter-second apart | p95 {lat['p95']:.3f} s (p50 "
        f"{lat['p50']:.3f} s, max {lat['max']:.3f} s, {lat['missing']} missed{seen}) "
        f"| the panel's poll of `data_version`: 0.25 s | **{lat['p95']:.2f} s** "
        f"| ≤ {TARGET_LATENCY_S:.0f} s | {verdict} |",
        f"| 10′. panel: resident set serving a {LARGE:,}-post thread / a {SMALL}-post one "
        f"| {rss_['large_kib'] / 1024:.1f} MiB | {SMALL} posts: {rss_['small_kib'] / 1024:.1f} MiB "
        f"| **{rss_['ratio']:.2f}** | ≤ {TARGET_RSS_RATIO} "
        f"| {'met' if rss_['ratio'] <= TARGET_RSS_RATIO else '**missed**'} |",
        f"| 10″. panel: first page of a {LARGE:,}-post thread / a {SMALL}-post one (worst of "
        f"`GET /`, `/api/thread` and `/events` to its first {FIRST_PAGE_POSTS} posts: "
        f"`{page['paths'][page['worst']]}`)"
        f" | {worst['large_ms']:.1f} ms | {SMALL} posts: {worst['small_ms']:.1f} ms "
        f"| **{worst['ratio']:.2f}×** | ≤ {TARGET_PAGE_RATIO:.0f}× "
        f"| {'met' if worst['ratio'] <= TARGET_PAGE_RATIO else '**missed**'} |",
        *burst_rows(m.get("burst")),
        *search_rows(m.get("search")),
    ]


def search_rows(q: dict[str, Any] | None) -> list[str]:
    if q is None:
        return []
    worst = max(SEARCH_WORDS, key=lambda k: q[k]["ratio"])
    return [
        f"| 10⁗. panel: search of the whole {q['posts']:,}-post thread (`GET /api/search`, "
        f"words no post holds: every post read; worst of ASCII words, `LIKE`, and words with a "
        f"letter past ASCII, folded by Python) | {q[worst]['ms']:.0f} ms (ASCII "
        f"{q['plain']['ms']:.0f} ms, past ASCII {q['folded']['ms']:.0f} ms) | reading every "
        f"post of the thread: {q['read_ms']:.0f} ms | **{q[worst]['ratio']:.2f}** "
        f"| ≤ {TARGET_SEARCH_RATIO:.0f} "
        f"| {'met' if q[worst]['ratio'] <= TARGET_SEARCH_RATIO else '**missed**'} |"]


def burst_rows(b: dict[str, Any] | None) -> list[str]:
    if b is None:
        return []
    return [
        f"| 10‴. panel: a click's input delay while {b['posts']:,} posts arrive (a real page, "
        f"{b['clicks']} clicks 100 ms apart) | p95 {b['p95_ms']:.1f} ms (max "
        f"{b['max_ms']:.1f} ms; the thread's DOM then holds {b['dom_posts']} posts; the last "
        f"shown after {b['caught_up_s']:.1f} s) | the same page idle: p95 "
        f"{b['idle_p95_ms']:.1f} ms | **{b['p95_ms']:.0f} ms** ({b['ratio']:.1f}× idle) "
        f"| ≤ {TARGET_CLICK_MS:.0f} ms "
        f"| {'met' if b['p95_ms'] <= TARGET_CLICK_MS else '**missed**'} |"]


def details(m: dict[str, Any]) -> str:
    """The section for docs/performance.md's details."""
    page = m["page"]
    rows = "\n".join(f"| `{path}` | {page[route]['small_ms']:.2f} | {page[route]['large_ms']:.2f} "
                     f"| {page[route]['ratio']:.2f} |" for route, path in page["paths"].items())
    lat, rss_ = m["latency"], m["rss"]
    seen = (f" The real page saw {lat['page_posts']} of {lat['posts']} posts appear, p95 "
            f"{lat['page_p95']:.3f} s." if lat["page_p95"] is not None else
            " (Chromium or Playwright missing: no real page this run.)")
    return (
        "### 10. The panel\n\n"
        "`bench/bench_panel.py` (docs/panel.md): the real `autodev panel` command on copies of "
        f"a demo run grown through `RunStore.commit` to {SMALL} and {LARGE:,} posts (built in "
        f"{m['built_s']:.1f} s, sync off). Commit → shown: {lat['clients']} events-stream "
        f"clients, {lat['posts']} commits at jittered moments about {COMMIT_EVERY} s apart; "
        f"delay from the end of each commit to each client's arrival: p50 {lat['p50']:.3f} s, "
        f"p95 {lat['p95']:.3f} s, max {lat['max']:.3f} s, {lat['missing']} missed.{seen} "
        f"Resident set after serving the page, the first page, the status and 3 s of the "
        f"stream (median of fresh processes): {rss_['small_kib'] / 1024:.1f} MiB at {SMALL} "
        f"posts, {rss_['large_kib'] / 1024:.1f} MiB at {LARGE:,}.\n\n"
        "| first page | ms at 100 posts (median) | ms at 100,000 | ratio (median of rounds) |\n"
        "| --- | --- | --- | --- |\n" + rows + "\n" + search_details(m.get("search")))


def search_details(q: dict[str, Any] | None) -> str:
    if q is None:
        return ""
    return (
        f"\nSearch (row 10⁗): `GET /api/search?q=…` through the real panel on the "
        f"{q['posts']:,}-post run, for words no post holds, so the answer is empty and every "
        f"post's text, author and engine is read (the server reads at most 100,000 posts per "
        f"answer, then names where to go on); {q['rounds']} interleaved rounds against reading "
        f"every post's columns in this process, median of per-round ratios. ASCII words "
        f"(`{SEARCH_WORDS['plain']}`, SQLite's `LIKE`): {q['plain']['ms']:.1f} ms, "
        f"{q['plain']['ratio']:.2f} of the whole read; words with a letter past ASCII "
        f"(`{SEARCH_WORDS['folded']}`, each field folded by Python's `str.lower`): "
        f"{q['folded']['ms']:.1f} ms, {q['folded']['ratio']:.2f}; reading the whole thread: "
        f"{q['read_ms']:.1f} ms. A match found among the newest posts answers sooner: the "
        f"read stops at the 50th match. The page asks 250 ms after the last key typed.\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--burst-only", action="store_true",
                        help="only the click-during-a-burst figure")
    parser.add_argument("--search-only", action="store_true",
                        help="only the search-the-whole-thread figure")
    args = parser.parse_args(argv)
    if args.search_only:
        work = Path(tempfile.mkdtemp(prefix="autodev-bench-search-"))
        try:
            large = grow(demo_run(work), work / "large", LARGE)
            result = search(large, SEARCH_ROUNDS[1 if not args.quick else 0], work)
            for row in search_rows(result):
                print(row)
            print(search_details(result))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    if args.burst_only:
        work = Path(tempfile.mkdtemp(prefix="autodev-bench-burst-"))
        try:
            for row in burst_rows(burst(demo_run(work), work)):
                print(row)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    m = measure(args.quick)
    for row in report(m):
        print(row)
    page = m["page"]
    for route, path in page["paths"].items():
        print(f"{path}: {page[route]}")
    print(f"threads built in {m['built_s']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
