"""The real CLI versions the conformance kit was written and recorded against: the one place
they are pinned (npm package, version)."""

from __future__ import annotations

CLAUDE: tuple[str, str] = ("@anthropic-ai/claude-code", "2.1.332")
CODEX: tuple[str, str] = ("@openai/codex", "0.171.0")

#: How to get them by hand, said when they are missing.
INSTALL_HINT = (
    f"npm install --prefix ~/.cache/autodev-test/npm {CLAUDE[0]}@{CLAUDE[1]} {CODEX[0]}@{CODEX[1]}"
)


if __name__ == "__main__":  # `python tests/conformance/versions.py`: the npm specs, for .ci/run
    print(f"{CLAUDE[0]}@{CLAUDE[1]} {CODEX[0]}@{CODEX[1]}")
