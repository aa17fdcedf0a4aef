"""Regenerate the docs' screenshots of the panel on the demo run, in Debian's Chromium:
docs/panel-screenshot.png (the page) and docs/timeline-screenshot.png (its `/timeline`).

    .venv/bin/python tests/browser/screenshot.py [--out docs/panel-screenshot.png]
        [--timeline-out docs/timeline-screenshot.png] [--hours 6] [--dir DIR] [--window]

Runs `autodev demo --dir DIR` (a new temporary directory by default), serves its run with the
real `autodev panel --run DIR/run --team DIR/team`, opens the printed URL headless and saves
the whole page as a 1280-pixel-wide window draws it (`--window`: only the first 900 pixels),
then the page's `/timeline?hours=H`. Needs the `panel` and `test` extras and
`apt-get install chromium`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
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


def shoot(directory: Path, out: Path, timeline_out: Path, *, full_page: bool = True,
          hours: float = 6.0) -> tuple[Path, Path]:
    done = subprocess.run([sys.executable, "-m", "autodev_shell.cli", "demo", "--dir",
                           str(directory)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"autodev demo failed: {done.stderr[-1000:]}")
    from playwright.sync_api import sync_playwright

    panel = Panel(directory / "run", team=directory / "team",
                  log=directory / "panel.stderr").start()
    try:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT},
                                              color_scheme="light", timezone_id="Europe/Lisbon",
                                              locale="en-GB")
                page = context.new_page()
                page.goto(panel.url)
                page.wait_for_selector("#thread .post")
                page.wait_for_selector("#lanes [data-lane]", state="attached")
                page.wait_for_timeout(1_000)  # the stream's first events are in
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=full_page)
                # The timeline (docs/timeline.md), on the host the panel's URL named.
                page.goto(urljoin(page.url, f"/timeline?hours={hours:g}"))
                page.wait_for_selector("#timeline svg")
                timeline_out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(timeline_out), full_page=True)
            finally:
                browser.close()
    finally:
        panel.stop()
    return out, timeline_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "panel-screenshot.png")
    parser.add_argument("--timeline-out", type=Path,
                        default=ROOT / "docs" / "timeline-screenshot.png")
    parser.add_argument("--hours", type=float, default=6.0,
                        help="the timeline's window (default 6)")
    parser.add_argument("--dir", type=Path, help="keep the demo here (default: a temp dir)")
    parser.add_argument("--window", action="store_true",
                        help=f"only what a {WIDTH} × {HEIGHT} window shows, not the whole page")
    args = parser.parse_args(argv)
    for reason in (panel_missing(), None if CHROMIUM else CHROMIUM_MISSING):
        if reason:
            print(f"screenshot: {reason}", file=sys.stderr)
            return 2
    directory = args.dir or Path(tempfile.mkdtemp(prefix="autodev-")) / "demo"
    for path in shoot(directory, args.out, args.timeline_out, full_page=not args.window,
                      hours=args.hours):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
