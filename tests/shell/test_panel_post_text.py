"""How the panel shows a post's text (docs/panel.md, "Thread"): control characters in it are
shown as their Unicode pictures (`␛` for ESC, `␋` for `\\v`, `␌` for `\\f`, `␍` for `\\r`, `␡`
for DEL), never interpreted — every one of them, however many a post holds; the tab and the
newline are kept as they are. C1 controls and the bidi controls that reorder text (an override
makes `evil\\u202eexe.txt` read as a `.exe`) are shown as their code point, `⟨U+202E⟩`.

The page's own function (`visible` in autodev_shell/panel/static/panel.js) is run as it is
written, outside any page: by Node when it is installed, else by the headless Chromium the
browser tests use (`chromium --dump-dom`, no Playwright, no panel). The expected text is stated
here on its own."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from importlib.resources import files
from urllib.parse import quote

import pytest

PANEL_JS = files("autodev_shell") / "panel" / "static" / "panel.js"

#: Posts with control characters: each C0 control alone, several in one post, the ones a
#: terminal acts on (`\r` redraw, `\v`, `\f`), an escape sequence, and text with none.
POSTS = [
    *(f"a{chr(c)}b" for c in range(0x20)),
    "a\x7fb",
    "\v\f\r",
    "one\rtwo\rthree",
    "x\vy\vz\fw\fv",
    "\x1b[31mred\x1b[0m and \x1b]0;title\x07 done\r\n",
    "tab\tand\nnewline\r\n\x00\x01",
    "plain text, é, 😀, and no control",
    # C1 controls and the bidi controls that reorder what follows them (a name such as
    # "evil\u202eexe.txt" reads "evil" + "txt.exe" reversed when shown raw).
    "evil\u202eexe.txt",
    "\x85\x9b31m\x80 \u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069",
    "",
]

#: The bidi controls (marks, embeddings, overrides, isolates) shown as their code point.
BIDI = {0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def picture(text: str) -> str:
    """Each C0 control but the tab and the newline as its Unicode picture (U+2400 + code), DEL
    as ␡ (U+2421), each C1 control and bidi control as `⟨U+XXXX⟩`; everything else as it is."""
    out = []
    for ch in text:
        code = ord(ch)
        if code == 0x7F:
            out.append("\u2421")
        elif code < 0x20 and ch not in "\t\n":
            out.append(chr(0x2400 + code))
        elif 0x80 <= code <= 0x9F or code in BIDI:
            out.append(f"⟨U+{code:04X}⟩")
        else:
            out.append(ch)
    return "".join(out)


def _visible_source() -> str:
    source = PANEL_JS.read_text(encoding="utf-8")
    found = re.search(r"^( *)function visible\(text\) \{\n.*?^\1\}$", source,
                      re.MULTILINE | re.DOTALL)
    assert found, "panel.js has no `function visible(text)`: where does a post's text go now?"
    return found.group(0)


def _run(script: str) -> str:
    """Run `script`, which leaves its answer (a string) in `answer`, in a JavaScript engine of
    this machine; the answer."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is not None:
        done = subprocess.run([node, "-e", f"{script}\nprocess.stdout.write(answer);"],
                              capture_output=True, text=True, timeout=60, check=True)
        return done.stdout
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("neither node nor chromium is installed: apt-get install nodejs (or "
                    "chromium, which .ci/run installs)")
    page = ("<html><body><pre id=out></pre><script>"
            f"{script}\ndocument.getElementById('out').textContent = answer;</script>")
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--dump-dom",
         "data:text/html;charset=utf-8," + quote(page, safe="")],
        capture_output=True, text=True, timeout=120, check=True)
    found = re.search(r"<pre id=\"out\">(.*?)</pre>", done.stdout, re.DOTALL)
    assert found, done.stdout[:500]
    return html.unescape(found.group(1))


def test_every_control_character_of_a_post_is_shown_as_its_picture() -> None:
    # JSON with every non-ASCII character escaped: the engines read it whatever their locale.
    script = (f"{_visible_source()}\n"
              f"const posts = {json.dumps(POSTS)};\n"
              "const answer = JSON.stringify(posts.map(visible));")
    shown = json.loads(_run(script))
    assert len(shown) == len(POSTS)
    for post, text in zip(POSTS, shown, strict=True):
        assert text == picture(post), (post, text)
    # And the rule itself, on the examples the page has to get right.
    assert picture("\v\f\r") == "␋␌␍"
    assert picture("x\vy\vz") == "x␋y␋z"
    assert picture("evil\u202eexe.txt") == "evil⟨U+202E⟩exe.txt"
