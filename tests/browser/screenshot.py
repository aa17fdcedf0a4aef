"""Regenerate the docs' screenshots of the panel on the demo run, in Debian's Chromium:
docs/panel-screenshot.png (the page, while the run waits on a live limit) and
docs/timeline-screenshot.png (its `/timeline`, once the demo has ended).

    .venv/bin/python tests/browser/screenshot.py [--out docs/panel-screenshot.png]
        [--timeline-out docs/timeline-screenshot.png] [--hours 6] [--dir DIR] [--window]
        [--speed 30]

Runs the demo (`autodev demo`'s team, script and virtual clock: `cli.demo.run_demo`) in
DIR (a new temporary directory by default) at SPEED times real time instead of the demo's 600,
so its wait with every participant limited (ana hopped to codex, codex and agy limited too:
"Waiting for codex — …") lasts long enough to be seen; serves its run with the real `autodev
panel --run DIR/run --team DIR/team` while the demo's daemon runs; opens the printed URL
headless and, once the page's first line says the run is waiting, saves the whole page as a
1280-pixel-wide window draws it (`--window`: only the first 900 pixels); then, when the demo
has ended, the page's `/timeline?hours=H` (the whole story). Needs the `panel` and `test`
extras and `apt-get install chromium`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urljoin

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # tests/: the shared helpers
sys.path.insert(2, str(ROOT))

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_MISSING,
    Panel,
    launch_chromium,
    panel_missing,
)

WIDTH, HEIGHT = 1280, 900


#: How much faster than real time the demo's waits pass here (the demo's own is 600): its
#: wait with every participant limited (25 virtual minutes) then lasts about 50 s.
SPEED = 30.0
#: The page's first line while every engine a turn can take is limited (docs/panel.md).
WAITING = "Waiting for "


def start_demo(directory: Path, speed: float) -> subprocess.Popen[str]:
    """The demo's run (`run_demo`: its team, script and virtual clock) at `speed`, in a
    process of its own, as `autodev demo` runs it."""
    directory.mkdir(parents=True, exist_ok=True)
    code = ("import sys; from pathlib import Path; from autodev_shell.cli.demo import run_demo;"
            " run_demo(Path(sys.argv[1]), speed=float(sys.argv[2]))")
    return subprocess.Popen([sys.executable, "-c", code, str(directory), repr(speed)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def wait_for_store(demo: subprocess.Popen[str], run: Path) -> None:
    deadline = time.monotonic() + 120
    while not (run / "run.db").exists():
        if demo.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the demo made no run: {demo.communicate()[1][-1000:]}")
        time.sleep(0.1)


def shoot(directory: Path, out: Path, timeline_out: Path, *, full_page: bool = True,
          hours: float = 6.0, speed: float = SPEED) -> tuple[Path, Path]:
    from playwright.sync_api import sync_playwright

    demo = start_demo(directory, speed)
    panel: Panel | None = None
    try:
        wait_for_store(demo, directory / "run")
        panel = Panel(directory / "run", team=directory / "team",
                      log=directory / "panel.stderr").start()
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT},
                                              color_scheme="light", timezone_id="Europe/Lisbon",
                                              locale="en-GB")
                page = context.new_page()
                page.set_default_timeout(120_000)
                page.goto(panel.url)
                page.wait_for_function(
                    "w => (document.querySelector('#now-text')?.textContent || '')"
                    ".startsWith(w)", arg=WAITING)
                page.wait_for_selector("#thread .post")
                page.wait_for_selector("#lanes [data-lane]", state="attached")
                # The run's clock rate is measured from two heartbeats 3 s apart.
                page.wait_for_function("() => / real time\\)/.test("
                                       "document.querySelector('#clock-note').textContent)")
                page.wait_for_timeout(1_000)
                now = str(page.locator("#now-text").text_content())
                if not now.startswith(WAITING):
                    raise SystemExit(f"the wait ended before the screenshot: {now!r}; "
                                     "try a lower --speed")
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=full_page)
                # The timeline (docs/timeline.md) of the whole demo, on the panel's host name.
                if demo.wait(timeout=600) != 0:
                    raise SystemExit(f"the demo failed: {demo.communicate()[1][-1000:]}")
                page.goto(urljoin(page.url, f"/timeline?hours={hours:g}"))
                page.wait_for_selector("#timeline svg")
                timeline_out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(timeline_out), full_page=True)
            finally:
                browser.close()
    finally:
        if panel is not None:
            panel.stop()
        if demo.poll() is None:
            demo.terminate()
            demo.wait(timeout=60)
    return out, timeline_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "panel-screenshot.png")
    parser.add_argument("--timeline-out", type=Path,
                        default=ROOT / "docs" / "timeline-screenshot.png")
    parser.add_argument("--hours", type=float, default=6.0,
                        help="the timeline's window (default 6)")
    parser.add_argument("--dir", type=Path, help="keep the demo here (default: a temp dir)")
    parser.add_argument("--speed", type=float, default=SPEED,
                        help=f"how much faster than real time the demo's waits pass (default "
                             f"{SPEED:g}; the demo's own is 600)")
    parser.add_argument("--window", action="store_true",
                        help=f"only what a {WIDTH} × {HEIGHT} window shows, not the whole page")
    args = parser.parse_args(argv)
    for reason in (panel_missing(), None if CHROMIUM else CHROMIUM_MISSING):
        if reason:
            print(f"screenshot: {reason}", file=sys.stderr)
            return 2
    directory = args.dir or Path(tempfile.mkdtemp(prefix="autodev-")) / "demo"
    for path in shoot(directory, args.out, args.timeline_out, full_page=not args.window,
                      hours=args.hours, speed=args.speed):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
