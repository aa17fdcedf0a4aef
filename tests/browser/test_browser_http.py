"""Issue 23, security: the real `autodev panel` in its own process, spoken to in plain HTTP
(the refusals need no browser). A finished demo run; nothing here needs its daemon.

Each refusal is checked beside the same request made right, which must pass: a panel that
refused everything would fail here.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import Panel, read_sse

from autodev_shell.panel.security import csrf_of, host_label


@pytest.fixture(scope="module")
def panel(needs_panel: None, demo_run: Path) -> Iterator[Panel]:
    started = Panel(demo_run / "run", team=demo_run / "team",
                    log=demo_run / "panel-http.stderr").start()
    yield started
    assert started.stop() == 0


def _controls(run: Path) -> list[tuple[str, str]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{run / 'run.db'}?mode=ro", uri=True)
    try:
        return [(str(c), str(a)) for c, a in conn.execute(
            "SELECT command, arg FROM controls ORDER BY id")]
    finally:
        conn.close()


def test_the_printed_url_is_loopback_with_a_token(panel: Panel) -> None:
    """On a host name of its own under `.localhost` (loopback in the browser), so its cookie
    goes to no other local server (issue 41, item 1)."""
    label = host_label(panel.token)
    assert re.fullmatch(r"p-[0-9a-f]{16}", label), label
    assert panel.url.startswith(f"http://{label}.localhost:{panel.port}/?token=")
    assert len(panel.token) >= 32
    mode = stat.S_IMODE(os.stat(panel.run_dir / "panel.token").st_mode)
    assert mode == 0o600, oct(mode)


def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_address(panel: Panel) -> None:
    answer = panel.request("GET", f"/?token={panel.token}", cookie=False)
    assert answer.status in (302, 303), answer
    location = answer.header("location") or ""
    assert "token" not in location and location.rstrip("/").endswith(("", panel.host)), location
    cookie = "; ".join(answer.all("set-cookie"))
    assert cookie.startswith("autodev_panel="), cookie
    lowered = cookie.lower()
    assert "httponly" in lowered and "samesite=strict" in lowered, cookie
    page = panel.request("GET", "/")
    assert page.status == 200, page


@pytest.mark.parametrize("path", ["/", "/api/status", "/events", "/api/thread?limit=5",
                                  "/api/lane/ana", "/api/prompt/ana"])
def test_no_token_is_refused(panel: Panel, path: str) -> None:
    """Every route, the events stream included, needs the session (issue 23, Security)."""
    for headers in ({}, {"Cookie": "autodev_panel=wrong"}, {"Cookie": "autodev_panel="}):
        answer = panel.request("GET", path, cookie=False, headers=headers, timeout=10)
        assert answer.status in (401, 403), (path, headers, answer)
        assert len(answer.text.strip().splitlines()) <= 1, answer
    wrong = panel.request("GET", "/?token=" + "x" * len(panel.token), cookie=False)
    assert wrong.status in (401, 403), wrong
    assert not wrong.all("set-cookie"), wrong.headers
    if path != "/events":  # the same request with the session is served
        assert panel.request("GET", path).status == 200, path


def test_static_files_need_the_session(panel: Panel) -> None:
    import re

    page = panel.request("GET", "/")
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
    assert assets, page.text[:500]
    for asset in assets:
        assert panel.request("GET", asset).status == 200, asset
        assert panel.request("GET", asset, cookie=False).status in (401, 403), asset


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "localhost.evil.example:{port}", "127.0.0.1:1", "[::2]:{port}",
                                  "localhost:{port}.evil.example"])
def test_a_host_outside_the_loopback_allowlist_gets_403(panel: Panel, host: str) -> None:
    """DNS rebinding: the browser sends the attacker's name as Host (issue 23, Security)."""
    bad = host.format(port=panel.port)
    for path in ("/", "/api/status", "/events"):
        answer = panel.request("GET", path, host=bad, timeout=10)
        assert answer.status == 403, (bad, path, answer)
    answer = panel.request("GET", f"/?token={panel.token}", host=bad, cookie=False)
    assert answer.status == 403 and not answer.all("set-cookie"), answer
    for good in (f"127.0.0.1:{panel.port}", f"localhost:{panel.port}", f"[::1]:{panel.port}"):
        assert panel.request("GET", "/api/status", host=good).status == 200, good


def test_a_cross_origin_post_gets_403_and_queues_nothing(panel: Panel) -> None:
    run = panel.run_dir
    before = _controls(run)
    refused = [
        panel.post("/api/say", "message=from+evil", headers={"Origin": "http://evil.example"}),
        panel.post("/api/say", "message=from+evil",
                   headers={"Origin": f"http://evil.example:{panel.port}"}),
        panel.post("/api/say", "message=from+evil", headers={"Origin": "null"}),
        panel.post("/api/say", "message=from+evil", origin=False),
        panel.post("/api/say", "message=from+evil", csrf=False),
        panel.post("/api/say", "message=from+evil", headers={"X-Autodev-CSRF": "wrong"}),
        panel.post("/api/pause", headers={"Origin": "http://evil.example"}),
        panel.post("/api/stop", csrf=False),
        panel.post("/api/say", "message=from+evil",
                   headers={"Origin": panel.origin, "Sec-Fetch-Site": "cross-site"}),
    ]
    for answer in refused:
        assert answer.status == 403, answer
    assert _controls(run) == before
    # The same request, same-origin with the header, is queued: the refusals above were not
    # a panel refusing every POST.
    ok = panel.post("/api/say", "message=hello+from+the+same+origin")
    assert ok.status == 200, ok
    assert ok.json().get("queued") is True, ok
    assert _controls(run)[len(before):] == [("say", "hello from the same origin")]


def test_every_answer_carries_the_strict_headers(panel: Panel) -> None:
    for path in ("/", "/api/status"):
        answer = panel.request("GET", path)
        csp = answer.header("content-security-policy") or ""
        assert "default-src 'self'" in csp and "unsafe-inline" not in csp, csp
        assert "frame-ancestors 'none'" in csp, csp
        assert answer.header("x-content-type-options") == "nosniff"
        assert answer.header("referrer-policy") == "no-referrer"
        assert "no-store" in (answer.header("cache-control") or "")
        assert answer.header("access-control-allow-origin") is None
    preflight = panel.request("OPTIONS", "/api/say", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert preflight.header("access-control-allow-origin") is None, preflight.headers


def test_the_events_stream_resumes_after_last_event_id(panel: Panel) -> None:
    """Last-Event-ID: a reconnecting client gets the posts of later revisions, each once."""
    import json
    import sqlite3

    conn = sqlite3.connect(f"file:{panel.run_dir / 'run.db'}?mode=ro", uri=True)
    try:
        stored = [(int(s), int(r)) for s, r in
                  conn.execute("SELECT seq, revision FROM posts ORDER BY seq")]
    finally:
        conn.close()
    assert len(stored) >= 10, stored
    cut = stored[len(stored) // 2][1]
    after = [(s, r) for s, r in stored if r > cut]

    def posts(events: list[dict[str, str]]) -> list[tuple[int, int]]:
        data = [json.loads(e["data"]) for e in events if e.get("event") == "post"]
        return [(int(d["seq"]), int(d["revision"])) for d in data]

    events = read_sse(panel, seconds=6, last_event_id=str(cut),
                      until=lambda ev: len(posts(ev)) >= len(after))
    assert posts(events) == after, (cut, events[:3])
    # The id a client keeps is the revision of the last post it has (the page contract).
    ids = [e["id"] for e in events if e.get("event") == "post" and "id" in e]
    assert ids and ids[-1] == str(after[-1][1]), ids


def test_read_only_has_no_post_route(needs_panel: None, demo_run: Path) -> None:
    panel = Panel(demo_run / "run", team=demo_run / "team", read_only=True,
                  log=demo_run / "panel-ro.stderr").start()
    try:
        before = _controls(demo_run / "run")
        for path in ("/api/say", "/api/pause", "/api/resume", "/api/stop"):
            answer = panel.post(path, "message=x")
            assert answer.status in (404, 405), (path, answer)
        put = panel.request("PUT", "/api/prompt/ana", body='{"text": "x"}', headers={
            "X-Autodev-CSRF": csrf_of(panel.token), "Origin": panel.origin, "If-Match": "*",
            "Content-Type": "application/json"})
        assert put.status in (404, 405), put
        assert _controls(demo_run / "run") == before
        assert panel.request("GET", "/api/status").status == 200
    finally:
        assert panel.stop() == 0


def test_a_file_broken_by_hand_can_be_repaired_from_the_panel(
        needs_panel: None, demo_run: Path, tmp_path: Path) -> None:
    """An operator who broke a participant file in an editor opens it in the panel, sees its
    text, and saves a fixed one; the other participants' prompts stay editable meanwhile
    (issue 23, Edit prompt: the loader validates what is *saved*)."""
    import json
    import shutil

    team = tmp_path / "team"
    shutil.copytree(demo_run / "team", team)
    panel = Panel(demo_run / "run", team=team, log=tmp_path / "panel.stderr").start()
    try:
        broken = "---\nprovider: [agy\n---\nYou are Eva, the tester.\n"
        (team / "eva.md").write_text(broken, encoding="utf-8")  # in an editor, while it runs
        other = panel.request("GET", "/api/prompt/ana")
        assert other.status == 200, other
        opened = panel.request("GET", "/api/prompt/eva")
        assert opened.status == 200, opened
        assert opened.json()["text"] == broken
        fixed = broken.replace("[agy", "agy")
        saved = panel.request("PUT", "/api/prompt/eva", body=json.dumps({"text": fixed}), headers={
            "X-Autodev-CSRF": csrf_of(panel.token), "Origin": panel.origin,
            "If-Match": opened.json()["etag"], "Content-Type": "application/json"})
        assert saved.status == 200, saved
        assert (team / "eva.md").read_text(encoding="utf-8") == fixed
    finally:
        panel.stop()
