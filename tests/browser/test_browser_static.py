"""Issue 23: the page works with no build step and no CDN, and any third-party file it ships is
recorded with its version and SHA-256.

The panel's static folder holds the project's own files. A file brought in from elsewhere (a
vendored htmx, say) must be listed in `autodev_shell/panel/static/VENDORED` as
`<sha256>  <file>  <project> <version>`, and its bytes must match: a test here fails when a
vendored file is added without its line, or changed after it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "autodev_shell" / "panel" / "static"
TEMPLATES = ROOT / "autodev_shell" / "panel" / "templates"
MANIFEST = STATIC / "VENDORED"
#: What a file copied from another project carries (a licence banner, a minified bundle's
#: name, a well-known library's own name or global).
THIRD_PARTY = re.compile(
    r"@license|@preserve|\bcopyright\b|\(c\) \d{4}|\bhtmx\b|\bjquery\b|\balpine(js)?\b|"
    r"\bSPDX-License-Identifier\b|sourceMappingURL", re.IGNORECASE)


def recorded() -> dict[str, tuple[str, str]]:
    """file -> (sha256, "project version") from the manifest (empty when there is none)."""
    if not MANIFEST.exists():
        return {}
    found: dict[str, tuple[str, str]] = {}
    for number, line in enumerate(MANIFEST.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        assert len(parts) == 3 and re.fullmatch(r"[0-9a-f]{64}", parts[0]), (
            f"{MANIFEST}:{number}: expected `<sha256>  <file>  <project> <version>`")
        assert re.search(r"\d+\.\d+", parts[2]), f"{MANIFEST}:{number}: no version"
        found[parts[1]] = (parts[0], parts[2])
    return found


def shipped() -> list[Path]:
    return sorted(p for p in STATIC.rglob("*") if p.is_file() and p != MANIFEST)


def test_the_panel_ships_static_files() -> None:
    assert STATIC.is_dir(), STATIC
    assert any(p.suffix == ".js" for p in shipped()), shipped()


def test_every_third_party_file_is_recorded_with_its_hash() -> None:
    listed = recorded()
    for name, (digest, _what) in listed.items():
        path = STATIC / name
        assert path.is_file(), f"{MANIFEST} lists {name}, which is not shipped"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{name} changed"
    unrecorded = []
    for path in shipped():
        name = path.relative_to(STATIC).as_posix()
        if name in listed:
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        found = THIRD_PARTY.search(text)
        if found or ".min." in path.name:
            unrecorded.append(f"{name} ({found.group(0) if found else '.min.'})")
    assert not unrecorded, (
        f"third-party files without their line in {MANIFEST.relative_to(ROOT)}: {unrecorded}")


def test_the_page_loads_nothing_from_another_host() -> None:
    """No CDN: every script, style and image the templates name is served by the panel."""
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text(encoding="utf-8")
        remote = re.findall(r'(?:src|href)\s*=\s*["\']?((?:https?:)?//[^"\'\s>]+)', text)
        assert not remote, (template.name, remote)
    for path in shipped():
        if path.suffix in (".js", ".css"):
            text = path.read_text(encoding="utf-8", errors="replace")
            remote = re.findall(r'(?:import\s*\(?|url\(|fetch\()\s*["\']?(?:https?:)?//', text)
            assert not remote, (path.name, remote)
