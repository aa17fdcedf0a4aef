"""The README's test command covers everything the project ships (issue 24).

The README installs `.[test]` and runs pytest: if an optional extra's library were missing from
`test`, its tests would skip for every newcomer and nobody would notice. So every extra that the
project ships for users (all but the tool extras `dev` and `bench`) must be inside `test`.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
TOOL_EXTRAS = {"test", "dev", "bench"}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower()


def test_the_test_extra_brings_every_shipped_extra() -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    tested = {_name(requirement) for requirement in extras["test"]}
    shipped = {
        name: {_name(r) for r in reqs} for name, reqs in extras.items() if name not in TOOL_EXTRAS
    }
    assert shipped, "pyproject.toml names no user extra (redis at least)"
    missing = {name: sorted(reqs - tested) for name, reqs in shipped.items() if reqs - tested}
    assert not missing, f"the test extra lacks what these extras bring (tests skip): {missing}"


def test_the_sharing_tests_do_not_skip_for_want_of_redis_py() -> None:
    import redis  # the test extra brings it: an ImportError here is the bug this file guards

    assert redis.__version__
