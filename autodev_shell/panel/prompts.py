"""Editing a participant's file from the panel (docs/panel.md, A14).

The file is found by the team loader (`Team.file_of`: the id must be a participant of the
team, the path is the loader's, never one built from the request). A save is checked against
the text the editor started from (an ETag of the file's bytes: another edit in between is a
409 with the current text), validated by the loader itself on a copy of the team folder with
the new text in place (bad YAML, an unknown key, a duplicate key: the loader's one line,
nothing written), then written atomically: the old text to `<file>.bak`, the new one to a
temporary file in the same folder, fsync, `os.replace`, fsync of the folder.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Final

from autodev_core.errors import ConfigError

from ..durability.files import atomic_write_bytes
from ..team import SETTINGS_FILE, load_team

#: The largest participant file the panel takes (the request body's cap too).
PROMPT_MAX_BYTES: Final = 256 * 1024

_write_lock = threading.Lock()


class PromptError(Exception):
    """A save refused: `status` is the HTTP status, the message one line."""

    def __init__(self, status: int, message: str, *, text: str = "", etag: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.text = text
        self.etag = etag


def etag_of(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest() + '"'


#: A participant id (C5): the file name `<id>.md`, no path parts.
_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def prompt_path(team_dir: Path, participant: str) -> Path:
    """The participant's file, as the loader finds it (ConfigError: no such participant).

    A team that does not load (a file broken by hand) still opens each participant's own
    file, `<id>.md` in the team folder, so that the panel can repair it: the save is then
    checked by loading the whole team, as always."""
    try:
        team = load_team(team_dir)
    except ConfigError as broken:
        path = team_dir / f"{participant}.md"
        if (_ID.fullmatch(participant) and participant.lower() != "readme"
                and path.is_file()):
            return path
        raise ConfigError(f"no participant {participant!r} here, and the team does not load: "
                          f"{broken}", source=str(team_dir)) from None
    return team.file_of(participant)


def read_prompt(team_dir: Path, participant: str) -> tuple[str, str, Path]:
    path = prompt_path(team_dir, participant)
    data = path.read_bytes()
    return data.decode("utf-8", "replace"), etag_of(data), path


def _validate(team_dir: Path, path: Path, text: str) -> None:
    """Load a copy of the team with `text` in `path`'s place: the loader's own checks."""
    with tempfile.TemporaryDirectory(prefix="autodev-panel-") as scratch:
        copy = Path(scratch) / team_dir.name
        copy.mkdir()
        for item in team_dir.iterdir():
            if item.is_file() and (item.suffix == ".md" or item.name == SETTINGS_FILE):
                shutil.copyfile(item, copy / item.name)
        (copy / path.name).write_text(text, encoding="utf-8")
        try:
            load_team(copy)
        except ConfigError as exc:
            # The loader's line, naming the real file rather than the copy.
            raise PromptError(422, str(exc).replace(str(copy), str(team_dir))) from None


def save_prompt(team_dir: Path, participant: str, text: str, if_match: str) -> Path:
    """Validate and write `text` as the participant's file, if it still is what the editor
    read (`if_match`, its ETag). Returns the path written."""
    if len(text.encode("utf-8", "surrogateescape")) > PROMPT_MAX_BYTES:
        raise PromptError(413, f"The file is larger than {PROMPT_MAX_BYTES // 1024} KiB.")
    with _write_lock:
        path = prompt_path(team_dir, participant)
        current = path.read_bytes()
        if if_match.strip() != etag_of(current):
            raise PromptError(409, "The file changed since you opened it; here is its text "
                              "now. Merge your edit into it and save again.",
                              text=current.decode("utf-8", "replace"), etag=etag_of(current))
        _validate(team_dir, path, text)
        atomic_write_bytes(path.with_name(path.name + ".bak"), current, mode=path.stat().st_mode)
        atomic_write_bytes(path, text.encode("utf-8"), mode=path.stat().st_mode)
    return path
