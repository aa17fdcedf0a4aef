"""Regenerate docs/timeline-screenshot.png: the panel's timeline page on the demo run, in
Debian's Chromium (docs/timeline.md).

    .venv/bin/python tests/browser/screenshot_timeline.py [--out docs/timeline-screenshot.png]
        [--dir DIR] [--hours 6]

Runs `autodev demo --dir DIR` (a new temporary directory by default), serves its run with the
real `autodev panel`, opens `/timeline?hours=H` headless and saves the page as a 1280-pixel-wide
window draws it. Needs the `panel` and `test` extras and `apt-get install chromium`.
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

WIDTH, HEIGHT = 1280, 720


def shoot(directory: Path, out: Path, *, hours: float) -> Path:
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
                                              color_scheme="light", locale="en-GB")
                page = context.new_page()
                page.goto(panel.url)
                # On the host the panel's URL named (the page's own, whatever it is).
                page.goto(urljoin(page.url, f"/timeline?hours={hours:g}"))
                page.wait_for_selector("#timeline svg")
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=True)
            finally:
                browser.close()
    finally:
        panel.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "timeline-screenshot.png")
    parser.add_argument("--dir", type=Path, help="keep the demo here (default: a temp dir)")
    parser.add_argument("--hours", type=float, default=6.0, help="the window (default 6)")
    args = parser.parse_args(argv)
    for reason in (panel_missing(), None if CHROMIUM else CHROMIUM_MISSING):
        if reason:
            print(f"screenshot: {reason}", file=sys.stderr)
            return 2
    directory = args.dir or Path(tempfile.mkdtemp(prefix="autodev-")) / "demo"
    print(shoot(directory, args.out, hours=args.hours))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
