"""docs/design.md opens with a picture of the code's layout, and the picture is the truth
(issue 15 item 4): every package and module it names exists, and every package and module of
the core appears in it, so a folder or module added, moved or removed without the picture fails
here. The picture is the first code block of the page, before its first section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
# One line of the tree: the guides of its ancestors, its own branch, its name, what it is.
LINE = re.compile(r"^(?P<guides>(?:│   |    )*)(?P<branch>├── |└── )?(?P<name>\S+)(?P<role>.*)$")


def picture(text: str) -> str:
    """The first code block of the page, which must come before its first `## ` section."""
    match = FENCE.search(text)
    assert match is not None, "docs/design.md has no code block"
    first_section = text.find("\n## ")
    assert first_section == -1 or match.start() < first_section, (
        "docs/design.md must open with the picture of the layout, before its first section"
    )
    return match.group(1)


def named_paths(tree: str) -> dict[str, str]:
    """Every path the picture names (folders end in '/'), relative to the repository, with the
    role written beside it."""
    paths: dict[str, str] = {}
    stack: list[str] = []
    for number, line in enumerate(tree.splitlines(), 1):
        if not line.strip():
            continue
        match = LINE.match(line)
        assert match, f"picture line {number} is not a tree line: {line!r}"
        depth = len(match["guides"]) // 4 + (1 if match["branch"] else 0)
        assert depth <= len(stack), f"picture line {number} skips a level: {line!r}"
        parent = "".join(stack[:depth])
        assert depth == 0 or parent.endswith("/"), f"line {number} hangs under a file: {line!r}"
        path = parent + match["name"]
        assert path not in paths, f"picture line {number} names {path} twice"
        paths[path] = match["role"].strip()
        stack[depth:] = [match["name"]]
    return paths


def code_paths(root: Path) -> set[str]:
    """Every package folder and module of autodev_core and autodev_shell, as the picture spells
    them (issue 27: the picture shows both halves)."""
    found = {"autodev_core/", "autodev_shell/"}
    for path in [*(root / "autodev_core").rglob("*.py"), *(root / "autodev_shell").rglob("*.py")]:
        if "__pycache__" in path.parts:
            continue
        found.add(path.relative_to(root).as_posix())
        for folder in path.relative_to(root).parents:
            if folder != Path(".") and (root / folder / "__init__.py").is_file():
                found.add(folder.as_posix() + "/")
    return found


def problems(tree: str, root: Path) -> list[str]:
    found: list[str] = []
    paths = named_paths(tree)
    for path in paths:
        target = root / path
        if path.endswith("/"):
            if not (target / "__init__.py").is_file():
                found.append(f"the picture names {path}, which is not a package")
        elif not target.is_file():
            found.append(f"the picture names {path}, which does not exist")
    found += [f"{path} is not in the picture" for path in sorted(code_paths(root) - set(paths))]
    found += [f"{path} says nothing of what it is" for path, role in paths.items()
              if path.endswith("/") and not role]
    return found


def test_15_design_md_opens_with_a_picture_that_matches_the_folders() -> None:
    tree = picture(DESIGN.read_text(encoding="utf-8"))
    assert problems(tree, ROOT) == []
    # the parts the page describes are folders of their own
    for part in ("detection/", "scheduler/", "control/", "simulation/", "testing/"):
        assert f"autodev_core/{part}" in named_paths(tree)


def test_15_the_picture_is_a_marked_block_for_the_docs_test() -> None:
    text = DESIGN.read_text(encoding="utf-8")
    match = FENCE.search(text)
    assert match is not None
    before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
    assert before.startswith("<!-- not run:"), "the picture needs its `not run` marker"


# -- the check catches drift (on a copy of the tree, not the real one) ------------------------


def _tree(tmp_path: Path, files: list[str]) -> Path:
    for name in files:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
    return tmp_path


PICTURE = """\
autodev_core/                 the core
├── __init__.py               names
├── engine.py                 a value
└── detection/                the reader
    ├── __init__.py           its names
    └── reader.py             detectors
autodev_shell/                the shell
└── __init__.py               (docstring only)
"""


def test_15_a_matching_picture_passes(tmp_path: Path) -> None:
    root = _tree(tmp_path, ["autodev_core/__init__.py", "autodev_core/engine.py",
                            "autodev_core/detection/__init__.py",
                            "autodev_core/detection/reader.py", "autodev_shell/__init__.py"])
    assert problems(PICTURE, root) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # a module moved away from where the picture puts it
        (["autodev_core/__init__.py", "autodev_core/reader.py", "autodev_core/engine.py",
          "autodev_core/detection/__init__.py", "autodev_shell/__init__.py"],
         "detection/reader.py, which does not exist"),
        # a new folder the picture does not show
        (["autodev_core/__init__.py", "autodev_core/engine.py",
          "autodev_core/detection/__init__.py", "autodev_core/detection/reader.py",
          "autodev_core/control/__init__.py", "autodev_shell/__init__.py"],
         "autodev_core/control/ is not in the picture"),
        # a new module the picture does not show
        (["autodev_core/__init__.py", "autodev_core/engine.py", "autodev_core/times.py",
          "autodev_core/detection/__init__.py", "autodev_core/detection/reader.py",
          "autodev_shell/__init__.py"],
         "autodev_core/times.py is not in the picture"),
        # a folder that is no package any more
        (["autodev_core/__init__.py", "autodev_core/engine.py", "autodev_core/detection/reader.py",
          "autodev_shell/__init__.py"],
         "names autodev_core/detection/, which is not a package"),
        # a module of the shell the picture does not show (issue 27: both halves)
        (["autodev_core/__init__.py", "autodev_core/engine.py",
          "autodev_core/detection/__init__.py", "autodev_core/detection/reader.py",
          "autodev_shell/__init__.py", "autodev_shell/store/__init__.py",
          "autodev_shell/store/sql.py"],
         "autodev_shell/store/ is not in the picture"),
    ],
    ids=["moved-module", "new-folder", "new-module", "not-a-package", "shell-folder"],
)
def test_15_a_picture_that_drifted_fails(tmp_path: Path, files: list[str], expected: str) -> None:
    found = problems(PICTURE, _tree(tmp_path, files))
    assert any(expected in problem for problem in found), found


def test_15_a_badly_drawn_picture_fails() -> None:
    with pytest.raises(AssertionError, match="skips a level"):
        named_paths("autodev_core/\n│   ├── engine.py\n")
    with pytest.raises(AssertionError, match="hangs under a file"):
        named_paths("autodev_core/\n├── engine.py\n│   └── x.py\n")
