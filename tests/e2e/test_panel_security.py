"""The panel's security model, each item a test (docs/panel.md "Security model"),
against the real `autodev panel` command over real HTTP on loopback."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

from helpers.panels import Panel, control_rows, make_run, make_team, panel_factory

from autodev_shell.panel.security import csrf_of, host_label, read_only_token

__all__ = ["panel_factory"]

ROUTES = ("/", "/events", "/api/status", "/api/thread", "/api/lane/ana", "/api/prompt/ana",
          "/static/panel.js", "/static/panel.css")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("panel")
    run = make_run(root, posts=3)
    panel = Panel(run, "--team", str(make_team(root)))
    yield panel
    assert panel.stop() == 0  # SIGTERM: a clean exit 0


# --- the token, the cookie, the token file ------------------------------------------------------


def test_the_printed_url_is_one_line_with_the_token_and_the_token_file_is_0600(
        served: Panel) -> None:
    # Issue 41: on the panel's own host name under .localhost (loopback in the browser, and a
    # cookie no other local server is sent).
    assert served.line.startswith(f"autodev panel: http://{host_label(served.token)}.localhost:")
    assert served.line.count("\n") == 1
    token_file = Path(served.proc.args[served.proc.args.index("--run") + 1]) / "panel.token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token_file.read_text().strip() == served.token
    assert len(served.token) >= 40


def test_the_token_is_exchanged_for_an_httponly_samesite_strict_cookie_and_stripped(
        served: Panel) -> None:
    answer = served.request("GET", f"/?token={served.token}", cookie=False)
    assert answer.status == 303
    assert answer.headers["Location"] == "/"  # the token leaves the address bar
    cookie = answer.headers["Set-Cookie"]
    assert cookie.startswith(f"autodev_panel={served.token};")
    for part in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert part in cookie
    page = served.request("GET", "/")
    assert page.status == 200 and "autodev panel" in page.text


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_refuses_a_request_without_the_cookie(served: Panel, path: str) -> None:
    answer = served.request("GET", path, cookie=False)
    assert answer.status == 401
    assert answer.text.count("\n") == 1  # one line
    assert served.request("GET", path, headers={"Cookie": "autodev_panel=wrong"},
                          cookie=False).status == 401


def test_a_wrong_token_in_the_url_is_refused(served: Panel) -> None:
    wrong = served.token[:-1] + ("A" if served.token[-1] != "A" else "B")
    answer = served.request("GET", f"/?token={wrong}", cookie=False)
    assert answer.status == 401 and "Set-Cookie" not in answer.headers


def test_tokens_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from autodev_shell.panel import security

    calls: list[tuple[bytes, bytes]] = []
    real = security.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    assert security.same("abc", "abc") and not security.same("abd", "abc")
    assert calls == [(b"abc", b"abc"), (b"abd", b"abc")]


# --- Host allowlist (DNS rebinding) ----------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1:1",
                                  "127.0.0.1.nip.io:{port}", "localhost:{other}"])
def test_a_host_outside_the_loopback_allowlist_gets_403(served: Panel, host: str) -> None:
    shown = host.format(port=served.port, other=served.port + 1)
    for path in ("/", "/events", "/api/status"):
        assert served.request("GET", path, host=shown).status == 403
    assert served.request("POST", "/api/say", host=shown, body="message=hi",
                          origin=f"http://{shown}").status == 403


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "[::1]", "LOCALHOST"])
def test_the_loopback_names_at_the_port_are_answered(served: Panel, name: str) -> None:
    assert served.request("GET", "/api/status", host=f"{name}:{served.port}").status == 200


# --- CSRF and Origin ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["no csrf", "wrong csrf", "no origin", "other origin",
                                  "other port", "cross-site fetch", "null origin"])
def test_a_post_without_the_csrf_header_and_same_origin_is_refused(
        served: Panel, case: str) -> None:
    run = Path(served.proc.args[served.proc.args.index("--run") + 1])
    before = control_rows(run)
    kwargs: dict[str, Any] = {}
    if case == "no csrf":
        kwargs["csrf"] = False
    elif case == "wrong csrf":
        kwargs["csrf"] = False
        kwargs["headers"] = {"X-Autodev-CSRF": served.token[:-2]}
    elif case == "no origin":
        kwargs["origin"] = None
    elif case == "other origin":
        kwargs["origin"] = "http://evil.example"
    elif case == "other port":
        kwargs["origin"] = f"http://127.0.0.1:{served.port + 1}"
    elif case == "cross-site fetch":
        kwargs["headers"] = {"Sec-Fetch-Site": "cross-site"}
    elif case == "null origin":
        kwargs["origin"] = "null"
    extra = kwargs.pop("headers", {})
    answer = served.request("POST", "/api/say", body="message=hello",
                            headers={"Content-Type": "application/x-www-form-urlencoded",
                                     **extra}, **kwargs)
    assert answer.status == 403, answer
    assert control_rows(run) == before  # nothing queued
    put = served.request("PUT", "/api/prompt/ana", body='{"text": "x"}',
                         headers={"If-Match": '"x"', **extra}, **kwargs)
    assert put.status == 403


def test_a_same_origin_post_with_the_csrf_header_queues_through_the_control_table(
        served: Panel) -> None:
    run = Path(served.proc.args[served.proc.args.index("--run") + 1])
    answer = served.request("POST", "/api/say", body="message=please+review+%3Cb%3E",
                            headers={"Content-Type": "application/x-www-form-urlencoded",
                                     "Sec-Fetch-Site": "same-origin"})
    assert answer.status == 200, answer
    body = answer.json()
    assert body["queued"] is True and body["key"] == f"say:{body['id']}"
    assert ("say", "please review <b>") in control_rows(run)


# --- response headers ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["page", "api", "static", "401", "403", "events"])
def test_every_answer_carries_the_security_headers_and_no_cors(served: Panel, case: str) -> None:
    origin = {"Origin": "http://evil.example"}
    if case == "page":
        answer = served.request("GET", "/", headers=origin)
    elif case == "api":
        answer = served.request("GET", "/api/status", headers=origin)
    elif case == "static":
        answer = served.request("GET", "/static/panel.js", headers=origin)
    elif case == "401":
        answer = served.request("GET", "/", cookie=False, headers=origin)
    elif case == "403":
        answer = served.request("GET", "/", host="evil.example", headers=origin)
    else:
        events = served.events()
        headers = events.response.headers
        events.close()
        answer = None
    headers = answer.headers if answer is not None else headers
    csp = headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["Cache-Control"] == "no-store"
    assert not [k for k in headers if k.lower().startswith("access-control-")]


def test_options_preflight_gets_no_cors(served: Panel) -> None:
    answer = served.request("OPTIONS", "/api/say", csrf=False, origin="http://evil.example",
                            headers={"Access-Control-Request-Method": "POST"})
    assert answer.status in (403, 405)
    assert not [k for k in answer.headers if k.lower().startswith("access-control-")]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_text = ""
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script_text += data


def test_the_page_has_no_inline_script_style_or_handler(served: Panel) -> None:
    parser = _Tags()
    parser.feed(served.request("GET", "/").text)
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    assert scripts and all(a.get("src", "").startswith("/static/") for a in scripts)
    assert parser.script_text.strip() == ""
    assert not [t for t, _ in parser.tags if t == "style"]
    for tag, attrs in parser.tags:
        assert "style" not in attrs, tag
        assert not [k for k in attrs if k.startswith("on")], (tag, attrs)
        for value in attrs.values():
            assert not (value or "").lower().startswith("javascript:")
    # the vendored-nothing promise: the script is the one hand-written file
    assert served.request("GET", "/static/panel.js").status == 200


# --- body caps ----------------------------------------------------------------------------------


def test_a_say_over_the_cap_is_refused_before_anything_is_queued(served: Panel) -> None:
    from autodev_shell.panel.app import SAY_MAX_BYTES

    run = Path(served.proc.args[served.proc.args.index("--run") + 1])
    before = control_rows(run)
    answer = served.request("POST", "/api/say", body="message=" + "a" * (SAY_MAX_BYTES + 1),
                            headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status == 413 and "KiB" in answer.json()["error"]
    assert control_rows(run) == before
    huge = served.request("POST", "/api/say", body="message=" + "%41" * (SAY_MAX_BYTES + 10),
                          headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert huge.status == 413
    assert control_rows(run) == before


def test_a_prompt_over_256_kib_is_refused(served: Panel) -> None:
    team = Path(served.proc.args[served.proc.args.index("--team") + 1])
    before = (team / "ana.md").read_bytes()
    etag = served.request("GET", "/api/prompt/ana").json()["etag"]
    text = "---\nprovider: claude\n---\n" + "x" * (256 * 1024)
    answer = served.request("PUT", "/api/prompt/ana", body=json.dumps({"text": text}),
                            headers={"If-Match": etag, "Content-Type": "application/json"})
    assert answer.status == 413
    assert (team / "ana.md").read_bytes() == before


# --- issue 41: a read-only credential, a derived CSRF value, a host of its own -----------------

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def test_the_page_holds_a_csrf_value_derived_from_the_session_never_the_secret(
        served: Panel) -> None:
    page = served.request("GET", "/").text
    assert served.token not in page  # HttpOnly means something: the page never holds it
    assert f'<meta name="autodev-csrf" content="{csrf_of(served.token)}">' in page
    assert csrf_of(served.token) != served.token
    # The secret itself is not the CSRF value: a script that learnt it still needs the cookie.
    before = control_rows(Path(served.proc.args[served.proc.args.index("--run") + 1]))
    answer = served.request("POST", "/api/say", body="message=x", csrf=False,
                            headers={**FORM, "X-Autodev-CSRF": served.token})
    assert answer.status == 403, answer
    assert control_rows(Path(served.proc.args[served.proc.args.index("--run") + 1])) == before


def test_the_read_only_url_opens_a_session_that_cannot_steer_the_run(served: Panel) -> None:
    run = Path(served.proc.args[served.proc.args.index("--run") + 1])
    watch = read_only_token(served.token)
    assert watch != served.token and watch not in (run / "panel.token").read_text()
    signed = served.request("GET", f"/?token={watch}", cookie=False)
    assert signed.status == 303
    cookie = signed.headers["Set-Cookie"]
    assert cookie.startswith(f"autodev_panel={watch};"), cookie
    assert "domain" not in cookie.lower()  # host-only: its own host name, no other
    session = {"Cookie": f"autodev_panel={watch}"}
    page = served.request("GET", "/", cookie=False, headers=session).text
    assert '<meta name="autodev-read-only" content="true">' in page
    assert 'id="say-form"' not in page and served.token not in page
    assert served.request("GET", "/api/status", cookie=False, headers=session).status == 200
    before = control_rows(run)
    for path in ("/api/say", "/api/pause", "/api/resume", "/api/stop"):
        answer = served.request("POST", path, body="message=hi", cookie=False, csrf=False,
                                headers={**FORM, **session, "X-Autodev-CSRF": csrf_of(watch)})
        assert answer.status == 403 and "read-only" in answer.text, (path, answer)
    put = served.request("PUT", "/api/prompt/ana", body='{"text": "x"}', cookie=False,
                         csrf=False, headers={**session, "If-Match": '"x"',
                                              "X-Autodev-CSRF": csrf_of(watch)})
    assert put.status == 403
    assert control_rows(run) == before


def test_a_read_only_panel_prints_the_read_only_credential_not_the_secret(
        tmp_path: Path, panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=1)
    panel = panel_factory(run, "--read-only")
    secret = (run / "panel.token").read_text().strip()
    assert panel.token == read_only_token(secret) != secret
    assert panel.line.startswith(f"autodev panel: http://{host_label(secret)}.localhost:")
    signed = panel.request("GET", f"/?token={panel.token}", cookie=False)
    assert signed.status == 303


def test_the_panels_own_host_name_is_answered_and_a_neighbours_is_not(served: Panel) -> None:
    mine = f"{host_label(served.token)}.localhost:{served.port}"
    assert served.request("GET", "/api/status", host=mine).status == 200
    other = f"p-0000000000000000.localhost:{served.port}"
    assert served.request("GET", "/api/status", host=other).status == 403


# --- --read-only, --host, the missing extra ---------------------------------------------------


def test_read_only_has_no_post_or_put_route(tmp_path: Path, panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=1)
    team = make_team(tmp_path)
    panel = panel_factory(run, "--team", str(team), "--read-only")
    for path in ("/api/say", "/api/pause", "/api/resume", "/api/stop"):
        answer = panel.request("POST", path, body="message=hi",
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert answer.status == 405, (path, answer)
    put = panel.request("PUT", "/api/prompt/ana", body='{"text": "x"}',
                        headers={"If-Match": '"x"'})
    assert put.status == 405
    assert control_rows(run) == []
    page = panel.request("GET", "/").text
    assert 'id="say-form"' not in page and 'id="stop"' not in page
    assert panel.request("GET", "/api/prompt/ana").status == 200  # reading stays


def test_a_non_loopback_host_prints_a_warning(tmp_path: Path, panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=1)
    panel = panel_factory(run, "--host", "0.0.0.0")
    assert panel.url.startswith("http://0.0.0.0:")
    assert panel.stop() == 0
    err = panel.stderr()
    assert "WARNING" in err and "not on loopback" in err
    quiet = panel_factory(run)
    assert quiet.stop() == 0
    assert "WARNING" not in quiet.stderr()


def test_without_the_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    run = make_run(tmp_path, posts=1)
    code = ("import sys; sys.modules['starlette'] = None; from autodev_shell.cli import main; "
            f"raise SystemExit(main(['panel', '--run', {str(run)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ})
    assert done.returncode == 2
    assert "pip install 'autodev[panel]'" in done.stderr
    assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_the_store_is_opened_read_only(tmp_path: Path) -> None:
    """The panel's reads go through `mode=ro` connections: SQLite refuses a write."""
    from autodev_shell.panel.store_reads import RunReader, connect_ro, open_ro_store

    run = make_run(tmp_path, posts=2)
    conn = connect_ro(run / "run.db")
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("INSERT INTO controls (command, arg, queued_at) VALUES ('stop', '', 'x')")
    store = open_ro_store(run)
    with pytest.raises(Exception, match="readonly"):
        store.enqueue_control("stop")
    store.close()
    reader = RunReader(run)
    assert reader.data_version() is not None
    reader._connection().execute("SELECT 1")  # type: ignore[union-attr]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader._connection().execute("DELETE FROM posts")  # type: ignore[union-attr]
    assert not reader._connection().in_transaction  # type: ignore[union-attr]
    reader.close()


def test_posts_and_lanes_carrying_markup_and_escapes_reach_the_page_as_data_only(
        served: Panel) -> None:
    """The page never receives HTML from the run: posts are JSON text (the page sets
    textContent), and the page's own HTML holds no run text at all."""
    page = served.request("GET", "/").text
    assert "post 0" not in page  # no post is rendered into the HTML
    assert re.search(r"<script[^>]*>\s*</script>", page)


# --- the session across a restart ---------------------------------------------------------------


def test_a_restarted_panel_keeps_the_sessions_of_the_pages_it_served(
        tmp_path: Path, panel_factory: Any) -> None:
    run = make_run(tmp_path, posts=1)
    first = panel_factory(run)
    assert first.stop() == 0
    second = panel_factory(run)
    assert second.token == first.token
    assert second.request("GET", "/api/status").status == 200  # the old cookie still works


@pytest.mark.parametrize("damage", ["mode 0644", "a link", "malformed", "deleted"])
def test_a_token_file_that_cannot_be_trusted_is_replaced_by_a_new_token(
        tmp_path: Path, panel_factory: Any, damage: str) -> None:
    run = make_run(tmp_path, posts=1)
    first = panel_factory(run)
    assert first.stop() == 0
    path = run / "panel.token"
    if damage == "mode 0644":
        path.chmod(0o644)
    elif damage == "a link":
        target = tmp_path / "elsewhere"
        target.write_text(first.token)
        target.chmod(0o600)
        path.unlink()
        path.symlink_to(target)
    elif damage == "malformed":
        path.write_text("short\n")
    else:
        path.unlink()  # deleting the file revokes every session
    second = panel_factory(run)
    assert second.token != first.token and len(second.token) >= 40  # a fresh one
    assert not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == second.token
    stale = second.request("GET", "/api/status", cookie=False,
                           headers={"Cookie": f"autodev_panel={first.token}"})
    assert stale.status == 401


def test_other_local_apps_cookies_do_not_hide_the_session(served: Panel) -> None:
    """Cookies are not kept apart by port: another app's odd cookies come along."""
    jar = (f'_xsrf=2|a|b; username-localhost-8888="2|1:0|10:17|"; odd={{x}} y; '
           f"autodev_panel={served.token}; last=1")
    assert served.request("GET", "/api/status", cookie=False,
                          headers={"Cookie": jar}).status == 200


def test_two_host_headers_are_refused(served: Panel) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=60)
    try:
        conn.putrequest("GET", "/api/status", skip_host=True)
        conn.putheader("Host", served.host)
        conn.putheader("Host", "evil.example")
        conn.putheader("Cookie", f"autodev_panel={served.token}")
        conn.endheaders()
        assert conn.getresponse().status in (400, 403)
    finally:
        conn.close()
