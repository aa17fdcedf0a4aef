"""Stand-in CLIs `claude`, `codex` and `agy` for the demo and the tests (SPEC C6).

They are real executables that print what the real CLIs print (stream-json with a rejected
`rate_limit_event`, codex's `■ You've hit your usage limit…`, agy's `Resets in 2h31m33s`,
network errors, crashes, codex's endless `Reconnecting... waiting for network`), driven by a
JSON script (see `_standin.py`). Package data may lose its exec bit, so `install_standins`
materialises them into a directory with the bit set; put that directory first on PATH.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autodev_core.names import PROVIDERS

#: One stand-in for each provider CLI (A8: Antigravity's binary is `agy`).
STANDIN_NAMES: tuple[str, ...] = PROVIDERS
SCRIPT_ENV = "AUTODEV_STANDIN_SCRIPT"
STATE_ENV = "AUTODEV_STANDIN_STATE"
LOG_ENV = "AUTODEV_STANDIN_LOG"
CLOCK_ENV = "AUTODEV_STANDIN_CLOCK"
_HERE = Path(__file__).parent
# Linux reads at most this much of a `#!` line; a longer interpreter path falls back to env.
_SHEBANG_MAX = 120

_WRAPPER = '''#!{interpreter}
"""Stand-in for the `{name}` CLI (autodev): see _standin.py beside this file."""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
sys.exit(runpy.run_path(os.path.join(HERE, "_standin.py"))["main"]("{name}"))
'''


def install_standins(bin_dir: str | os.PathLike[str], *, interpreter: str | None = None) -> Path:
    """Write the stand-ins into `bin_dir` (created if needed) with the exec bit set; return it.

    `interpreter` defaults to the running Python (so the stand-ins need nothing on PATH); a path
    too long for a `#!` line falls back to `/usr/bin/env python3`.
    """
    target = Path(bin_dir)
    target.mkdir(parents=True, exist_ok=True)
    python = interpreter or sys.executable or "/usr/bin/env python3"
    if len(python) > _SHEBANG_MAX or " " in python.strip():
        python = "/usr/bin/env python3"
    source = (_HERE / "_standin.py").read_text(encoding="utf-8")
    (target / "_standin.py").write_text(source, encoding="utf-8")
    mode = stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
    for name in STANDIN_NAMES:
        path = target / name
        path.write_text(_WRAPPER.format(interpreter=python, name=name), encoding="utf-8")
        path.chmod(mode)
    return target


def write_script(path: str | os.PathLike[str], script: Mapping[str, Any]) -> Path:
    """Write a stand-in script (per CLI a queue of answers, then defaults) as JSON, and reset
    its cursor so the queues start from the first answer."""
    target = Path(path)
    target.write_text(json.dumps(script, ensure_ascii=False, indent=2), encoding="utf-8")
    Path(str(target) + ".cursor").unlink(missing_ok=True)
    return target


def standin_env(
    bin_dir: str | os.PathLike[str],
    script: str | os.PathLike[str] | None = None,
    *,
    log: str | os.PathLike[str] | None = None,
    clock: str | os.PathLike[str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """An environment whose PATH finds the stand-ins first and that names their script (and,
    with `clock`, the `VirtualClock` ledger each call charges its `duration` to)."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", os.defpath)])
    if script is not None:
        env[SCRIPT_ENV] = str(script)
    if log is not None:
        env[LOG_ENV] = str(log)
    if clock is not None:
        env[CLOCK_ENV] = str(clock)
    return env
