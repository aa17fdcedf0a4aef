"""Issue 23: the panel in a real browser against a real daemon (`autodev run --fast 1` on the
stand-in CLIs) and the real `autodev panel` command, each in its own process.

One daemon and one panel for the module; the tests run in file order and each waits for the
state it starts from. The team: rui (codex) takes the first turn, ana (claude) the second.
The daemon is paused before any claude call, so the page is open before ana's limit exists:
resuming from the page starts ana's turn, whose answer is a limit for two hours (A2).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import Panel, RunDaemon, panel_over, participant_file, wait_for

#: ana's limit lasts this long from the start of the module: long past the module's end.
LIMIT = timedelta(hours=2)
RUI_FILE = participant_file("codex", "You are Rui, the implementer.")


@pytest.fixture(scope="module")
def run(browser: Any, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[RunDaemon, Panel]]:
    root = tmp_path_factory.mktemp("live")
    reset = int((datetime.now(UTC) + LIMIT).timestamp())
    daemon = RunDaemon(
        root,
        {"rui": RUI_FILE, "ana": participant_file("claude", "You are Ana, the reviewer.")},
        {
            "codex": {"answers": [{"kind": "post", "post": "rui: first patch", "sleep": 4}],
                      "default": {"kind": "post", "post": "rui: next patch", "sleep": 1}},
            "claude": {"answers": [{"kind": "limit", "resets_at": reset}],
                       "default": {"kind": "post", "post": "ana: review", "sleep": 1}},
        },
        order=("rui", "ana"),
    ).start()
    daemon.control("pause")  # during rui's first call (it sleeps 4 s): no claude call yet
    wait_for(lambda: daemon.status()["status"] == "paused", "the run paused")
    with panel_over(daemon, root) as pair:
        yield pair


def running(daemon: RunDaemon) -> None:
    """The state the tests after the first start from (each may also run alone, `-k`)."""
    if daemon.status()["status"] == "paused":
        daemon.control("resume")
        wait_for(lambda: daemon.status()["status"] != "paused", "the run resumed")


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.text_content() or "").strip()


def wait_text(page: Any, selector: str, pattern: str) -> str:
    """Wait until `selector`'s text matches `pattern` (a regex); return the text."""
    page.wait_for_function(
        "([s, p]) => { const e = document.querySelector(s);"
        " return e && new RegExp(p).test(e.textContent); }", arg=[selector, pattern])
    return text(page, selector)


def timer_minutes(label: str) -> int:
    """Minutes left in a countdown like "back at 14:30 WEST (in 1h 12m)"."""
    found = re.search(r"\(in (?:(\d+)\s*h\s*)?(\d+)\s*m", label)
    assert found, label
    return int(found.group(1) or 0) * 60 + int(found.group(2))


def test_a_limit_appears_and_its_countdown_ticks(run: tuple[RunDaemon, Panel],
                                                 open_page: Any) -> None:
    daemon, panel = run
    opened = open_page(panel, clock=datetime.now(UTC))
    page = opened.page
    wait_text(page, "#run-status", "paused")
    ana = page.locator('#participants article[data-participant="ana"]')
    assert ana.count() == 1
    assert page.locator("#engines .limit").count() == 0, "limited before any claude call"

    page.click("#resume")
    # Issue 41 item 2: the limit is said once, in the engines view; ana's card points to it.
    limit = page.locator('#engines .engine-row[data-state="limited"] .limit').first
    limit.wait_for(state="visible", timeout=60_000)
    engine = str(limit.get_attribute("data-engine"))
    assert engine.startswith("claude"), engine
    ana.locator(f'.see-engines a[href="#engine-{engine}"]').wait_for(state="attached")
    assert ana.locator(".limit").count() == 0, "the limit repeated in the card"
    row = page.locator(f'#engines .engine-row[data-engine="{engine}"]')
    assert "in the chains of: ana" in " ".join(str(row.text_content()).split())
    # The instant comes from the core's value (`autodev status --json`), not re-derived.
    stored = [r for r in daemon.status()["limits"] if r["engine"].startswith("claude")]
    assert len(stored) == 1, daemon.status()["limits"]
    shown = limit.locator("time[datetime]").first.get_attribute("datetime")
    assert shown is not None
    until = datetime.fromisoformat(shown.replace("Z", "+00:00"))
    assert until == datetime.fromisoformat(stored[0]["until"]), (shown, stored)

    # The "why waiting" card: where the reset came from, and the notice's line linked to
    # the lane that holds it.
    card = " ".join(str(limit.text_content()).split())
    assert re.search(r"(?i)notice", card), card
    link = limit.locator('a[href="#lane-ana"]')
    assert link.count() == 1, limit.inner_html()
    assert page.locator("#lane-ana [data-lane=ana]").count() == 1

    timer = limit.locator("[role=timer]").first
    label = str(timer.text_content())
    assert re.search(r"back at \d{1,2}:\d{2}", label), label
    left = timer_minutes(label)
    expected = (until - datetime.now(UTC)).total_seconds() / 60
    assert abs(left - expected) <= 2, (label, expected)

    # The page ticks by itself: 30 minutes later (the page's clock) it says 30 minutes less.
    page.clock.fast_forward("30:00")
    page.wait_for_function(
        "([e, m]) => { const t = e.textContent.match(/\\(in (?:(\\d+)\\s*h\\s*)?(\\d+)\\s*m/);"
        " return t && (+(t[1]||0)*60 + +t[2]) <= m; }",
        arg=[timer.element_handle(), left - 29])
    later = timer_minutes(str(timer.text_content()))
    assert left - 32 <= later <= left - 29, (left, later)
    # At zero it says "checking…" (the daemon has not yet said the limit lifted).
    page.clock.fast_forward(int((later + 2) * 60 * 1000))
    page.wait_for_function("e => e.textContent.includes('checking…')",
                           arg=timer.element_handle())
    assert opened.errors == [], opened.errors


def test_a_say_typed_in_the_page_reaches_the_thread_exactly_once(
        run: tuple[RunDaemon, Panel], open_page: Any) -> None:
    daemon, panel = run
    running(daemon)
    page = open_page(panel).page
    wait_text(page, "#run-status", "running|rate_limited")
    message = f"hello from the page {time.time_ns()}"
    page.fill("#say-form textarea[name=message]", message)
    page.locator("#say-form [type=submit]").click()
    result = wait_text(page, "#say-result", r"in the thread at revision \d+")
    assert "queued" in result, result
    revision = int(re.findall(r"revision (\d+)", result)[-1])
    wait_for(lambda: any(t == message for _r, _p, t in daemon.posts()), "the say's post")
    mine = [(r, t) for r, _p, t in daemon.posts() if t == message]
    assert mine == [(revision, message)], mine
    # Later revisions come and go: still once, in the store and in the page.
    wait_for(lambda: daemon.posts()[-1][0] > revision + 1, "two more revisions")
    assert [t for _r, _p, t in daemon.posts()].count(message) == 1
    assert [c for c in daemon.controls() if c == ("say", message)] == [("say", message)]
    page.wait_for_selector(f'#thread .post[data-revision="{revision}"]')
    texts = page.locator("#thread .post .text").all_text_contents()
    assert [t.strip() for t in texts].count(message) == 1, texts
    assert page.input_value("#say-form textarea[name=message]") == ""


def test_pause_and_resume_from_the_page(run: tuple[RunDaemon, Panel], open_page: Any) -> None:
    daemon, panel = run
    running(daemon)
    page = open_page(panel).page
    wait_text(page, "#run-status", "running|rate_limited")
    page.click("#pause")
    wait_text(page, "#run-status", "paused")
    assert daemon.status()["status"] == "paused"
    assert daemon.controls()[-1] == ("pause", "")
    count = len(daemon.posts())
    time.sleep(3)  # rui posts about every second while running
    assert len(daemon.posts()) == count, "posts while paused"
    page.click("#resume")
    wait_text(page, "#run-status", "running|rate_limited")
    assert daemon.controls()[-1] == ("resume", "")
    wait_for(lambda: len(daemon.posts()) > count, "a post after resume")
    last = daemon.posts()[-1][0]
    page.wait_for_selector(f'#thread .post[data-revision="{last}"]')


def loader_error(tmp: Path, text: str) -> str:
    """The loader's own one-line reason for a participant file (what the page must show)."""
    from autodev_core.errors import ConfigError
    from autodev_shell.team import load_team

    folder = tmp / f"check-{time.time_ns()}"
    folder.mkdir()
    (folder / "rui.md").write_text(text, encoding="utf-8")
    try:
        load_team(folder)
    except ConfigError as exc:
        return exc.reason
    raise AssertionError(f"the loader takes {text!r}")


def _edit_rui_prompt(page: Any) -> None:
    """Opens rui's prompt editor and waits for the file's text in it."""
    page.click('button.edit-prompt[data-participant="rui"]')
    page.wait_for_selector("#prompt-dialog[open]")
    page.wait_for_function("() => document.querySelector('#prompt-text').value.length > 0")


def _save_rui_prompt(page: Any, text: str) -> int:
    """Puts `text` in the editor and saves it; the status of the PUT the page sent."""
    page.fill("#prompt-text", text)
    with page.expect_response(lambda r: "/api/prompt/rui" in r.url
                              and r.request.method == "PUT") as answer:
        page.click("#prompt-save")
    status: int = answer.value.status
    return status


@pytest.mark.parametrize("broken", [
    "---\nprovider: [codex\n---\nWork.\n",  # bad YAML
    "---\nprovider: codex\nbogus: 1\n---\nWork.\n",  # unknown key
    "---\nprovider: codex\nprovider: claude\n---\nWork.\n",  # duplicate key
])
def test_a_broken_prompt_edit_shows_the_loaders_error_and_writes_nothing(
        run: tuple[RunDaemon, Panel], open_page: Any, tmp_path: Path, broken: str) -> None:
    daemon, panel = run
    running(daemon)
    page = open_page(panel).page
    target = daemon.team / "rui.md"
    before = target.read_bytes()
    listing = sorted(p.name for p in daemon.team.iterdir())
    _edit_rui_prompt(page)
    assert page.input_value("#prompt-text") == before.decode("utf-8")
    assert _save_rui_prompt(page, broken) == 422
    reason = loader_error(tmp_path, broken)
    shown = wait_text(page, "#prompt-error", ".")
    assert reason in shown, (reason, shown)
    assert len(shown.splitlines()) == 1, shown
    assert target.read_bytes() == before
    assert sorted(p.name for p in daemon.team.iterdir()) == listing  # no .bak, no temp file
    assert page.locator("#prompt-dialog[open]").count() == 1  # the edit is still there to fix


def test_a_conflicting_prompt_edit_gets_409_in_the_page(run: tuple[RunDaemon, Panel],
                                                        open_page: Any) -> None:
    daemon, panel = run
    running(daemon)
    page = open_page(panel).page
    target = daemon.team / "rui.md"
    _edit_rui_prompt(page)
    theirs = RUI_FILE.replace("the implementer.", "the implementer (edited in a terminal).")
    target.write_text(theirs, encoding="utf-8")  # someone else saves first
    mine = RUI_FILE.replace("the implementer.", "the implementer (edited in the page).")
    assert _save_rui_prompt(page, mine) == 409
    shown = wait_text(page, "#prompt-error", ".")
    assert re.search(r"(?i)changed|conflict|409|modified", shown), shown
    assert target.read_text(encoding="utf-8") == theirs, "the stale edit was written"
    assert not (daemon.team / "rui.md.bak").exists()

    # Issue 41: the operator's text stays in the editor (never replaced by the file's), and
    # the file's newer text is shown beside it, read-only, to merge from.
    assert page.input_value("#prompt-text") == mine
    page.locator("#prompt-theirs").wait_for(state="visible")
    assert page.input_value("#prompt-theirs") == theirs
    assert page.locator("#prompt-theirs").get_attribute("readonly") is not None

    # With the current text in hand (merged by the operator) the edit goes through,
    # atomically, keeping a .bak; the file's side goes away.
    edited = theirs.replace("(edited in a terminal)", "(edited in the page, after)")
    assert _save_rui_prompt(page, edited) == 200
    # The running daemon reads the file again at the next turn start (docs/participants.md).
    said = wait_text(page, "#prompt-result", "appl")
    assert "next turn starts" in said and "rui's next fresh turn" in said, said
    assert target.read_text(encoding="utf-8") == edited
    assert (daemon.team / "rui.md.bak").read_text(encoding="utf-8") == theirs
    assert page.locator("#prompt-theirs").is_hidden()


FOCUSABLE = """() => {
  const seen = e => e.getClientRects().length > 0
    && !e.closest('dialog:not([open]), [hidden], [inert]')
    && getComputedStyle(e).visibility !== 'hidden';
  return Array.from(document.querySelectorAll(
      'a[href], button, textarea, input, select, summary, [tabindex]'))
    .filter(e => !e.disabled && e.tabIndex >= 0 && seen(e)).map(window.__name);
}"""
NAME = """window.__name = e => e === document.body || !e ? 'body' : (e.id ? '#' + e.id :
  e.tagName.toLowerCase() + (e.dataset.participant ? '[' + e.dataset.participant + ']' : '') +
  (e.className ? '.' + String(e.className).trim().replace(/\\s+/g, '.') : '') +
  ':' + (e.textContent || e.getAttribute('aria-label') || '').trim().slice(0, 30));"""


def test_keyboard_alone_reaches_every_control(run: tuple[RunDaemon, Panel],
                                              open_page: Any) -> None:
    """Tab order: every enabled control is reached, shows its focus, and works from the keys."""
    _daemon, panel = run
    running(_daemon)
    page = open_page(panel).page
    wait_text(page, "#run-status", "running|rate_limited")
    page.evaluate(NAME)
    controls = page.evaluate(FOCUSABLE)
    for needed in ("#pause", "#stop", "#live-toggle"):
        assert needed in controls, controls
    assert any(c.startswith("textarea") or "message" in c for c in controls), controls
    assert sum(".edit-prompt" in c for c in controls) == 2, controls
    reached: list[str] = []
    outlines: dict[str, str] = {}
    page.locator("body").focus()
    for _ in range(len(controls) * 2 + 10):
        page.keyboard.press("Tab")
        name = page.evaluate("window.__name(document.activeElement)")
        reached.append(name)
        outlines[name] = page.evaluate(
            "(() => { const s = getComputedStyle(document.activeElement);"
            " return s.outlineStyle + ' ' + s.outlineWidth + ' ' + s.boxShadow; })()")
    missing = [c for c in controls if c not in reached]
    assert not missing, (missing, reached)
    for name in ("#pause", "#stop"):
        style = outlines[name]
        assert not style.startswith("none") or "rgb" in style, (name, style)
    # Enter on the focused Stop opens its dialog; Escape closes it; nothing was queued.
    for _ in range(len(controls) * 2 + 10):
        if page.evaluate("window.__name(document.activeElement)") == "#stop":
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#stop-dialog[open]")
    page.keyboard.press("Escape")
    page.wait_for_selector("#stop-dialog", state="hidden")
    assert ("stop", "") not in run[0].controls()
    # `/` outside a text field focuses the say box (docs/panel.md); inside one it is a slash.
    page.locator("#stop").focus()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.name") == "message"
    page.keyboard.type("a/b")
    assert page.input_value("#say-form textarea[name=message]") == "a/b"
    page.fill("#say-form textarea[name=message]", "")


def test_stop_asks_for_confirmation_then_the_page_shows_daemon_not_running(
        run: tuple[RunDaemon, Panel], open_page: Any) -> None:
    daemon, panel = run
    running(daemon)
    opened = open_page(panel)
    page = opened.page
    wait_text(page, "#daemon", "^\\s*daemon running")
    page.click("#stop")
    page.wait_for_selector("#stop-dialog[open]")
    time.sleep(1)
    assert ("stop", "") not in daemon.controls() and daemon.running()
    page.click("#stop-cancel")
    page.wait_for_selector("#stop-dialog", state="hidden")
    time.sleep(1)
    assert ("stop", "") not in daemon.controls() and daemon.running()

    page.click("#stop")
    page.click("#stop-confirm")
    assert daemon.proc is not None
    assert daemon.proc.wait(timeout=60) == 0
    assert daemon.controls().count(("stop", "")) == 1
    wait_text(page, "#daemon", "daemon not running")
    wait_text(page, "#run-status", "stopped")
    for control in ("#pause", "#resume", "#stop"):
        assert page.locator(control).is_disabled(), control
    # A page opened now says the same.
    fresh = open_page(panel).page
    assert "daemon not running" in text(fresh, "#daemon")
    assert fresh.locator("#pause").is_disabled()
    assert opened.errors == [], opened.errors
