"""The harness for the user's own orchestrator (issue 12 item 5, SPEC 0.4): realistic CLI
outputs built from the notice corpus, and a machine that takes the user's loop and catches a
loop that loses its last write at a stop."""

from __future__ import annotations

import contextlib
import io
import re
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.clock import T0 as NOW
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import classify_output, extract_post
from autodev_core.testing import OUTPUT_KINDS, cli_outputs, notice_outputs
from autodev_core.testing.notices import NOTICE_CASES

ROOT = Path(__file__).resolve().parents[2]


def _corpus() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in sorted((ROOT / "tests" / "fixtures" / "notices").glob("*.yaml")):
        cases += yaml.safe_load(path.read_text(encoding="utf-8"))
    return cases


def test_the_shipped_notices_are_the_corpus_cases() -> None:
    """Every limit, network and login case of tests/fixtures/notices is shipped, word for word."""
    corpus = {
        c["name"]: (c["provider"], c["expect"], c.get("stdout") or "", c.get("stderr") or "",
                    c.get("exit"))
        for c in _corpus() if c["expect"] in ("limit", "network", "login")
    }
    shipped = {c[0]: (c[1], c[2], c[4], c[5], c[6]) for c in NOTICE_CASES}
    assert shipped == corpus
    for case in NOTICE_CASES:
        if case[2] == "limit":
            assert case[3] in ("epoch", "relative", "clock", "date", "none")


#: What `classify_output` must read in each kind `cli_outputs` draws (A2-A6, A26, A28, A31, A32):
#: a notice is its kind; a post, model text over 300 characters quoting a notice (A5), a crash,
#: a timeout and an empty turn are all `other` (what failed is the caller's call).
READ_AS = {"limit": "limit", "network": "network", "login": "login", "post": "other",
           "long-text": "other", "exit": "other", "timeout": "other", "empty": "other"}


def test_every_kind_has_a_reading() -> None:
    assert set(READ_AS) == set(OUTPUT_KINDS)


@pytest.mark.parametrize("kind", OUTPUT_KINDS)
@pytest.mark.parametrize("provider", ["claude", "codex", "agy"])
@given(data=st.data())
def test_cli_outputs_are_read_as_the_kind_they_stand_for(
    provider: str, kind: str, data: Any
) -> None:
    """Issue 24: a shipped strategy makes only what it claims, for every provider and kind."""
    if kind == "login" and provider != "claude":
        with pytest.raises(ValueError):  # only claude has a login check (A32)
            data.draw(cli_outputs(provider, kinds=[kind]))
        return
    output = data.draw(cli_outputs(provider, kinds=[kind]))
    assert output.kind == kind
    seen = classify_output(provider, stdout=output.stdout, stderr=output.stderr,
                           exit_code=output.exit_code, now=NOW, local_tz=UTC)
    assert seen.kind == READ_AS[kind], (output, seen)
    if kind in ("post", "long-text"):
        assert output.post and extract_post(provider, output.stdout) == output.post
    else:
        assert output.post is None
    if kind == "long-text":
        said = output.post if provider != "agy" else output.stdout
        assert len(said.strip()) > 300  # A5: over 300 characters, whatever carries it
    if kind == "timeout":
        assert output.timed_out and output.exit_code is None


def test_every_kind_and_reset_form_can_be_drawn() -> None:
    assert set(OUTPUT_KINDS) >= {"post", "limit", "network", "login", "long-text"}
    for form in ("epoch", "relative", "clock", "date", "none"):
        notice_outputs("claude", "limit", form)  # claude's corpus has every form
    with pytest.raises(ValueError, match="no login notice of codex"):
        notice_outputs("codex", "login")


def test_the_guide_catches_the_lost_last_write_and_passes_the_fixed_loop() -> None:
    """docs/testing-your-orchestrator.md, run: the buggy loop fails, the fixed one passes."""
    page = (ROOT / "docs" / "testing-your-orchestrator.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert len(blocks) == 4
    namespace: dict[str, Any] = {"__name__": "docs_guide"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, "docs/testing-your-orchestrator.md", "exec"), namespace)
    assert namespace["FixedLoopMachine"].make is namespace["FixedLoop"]
    shown = re.findall(r"```text\n(.*?)```", page, flags=re.DOTALL)
    assert out.getvalue() == shown[0] + shown[2]  # the rules printed (shown[1]: the failure)
    # issue 39 item 4: the failure the page shows has the shape the harness gives it.
    failure = shown[1].split("\n")
    assert failure[0].startswith("your store does not hold the state after ")
    assert failure[1:5] == ["  rule: C3, the contract: the store holds the state after each step",
                            "  expected: saved() == state", "  your loop: an older state",
                            "  differs:"]
    assert all(line.startswith("    ") and ": expected " in line and ", your loop " in line
               for line in failure[5:] if line)


def test_field_diff_lists_only_the_fields_that_differ() -> None:
    """Issue 39 item 4: a short diff of the differing fields, nested ones by their path, long
    values cut, instead of two whole reprs."""
    from autodev_core import CallEnded, Engine
    from autodev_core.testing import field_diff

    a = CallEnded(now=NOW, participant="ana", engine=Engine("claude"), kind="exit",
                  exit_code=1)
    b = CallEnded(now=NOW, participant="ana", engine=Engine("codex"), kind="exit", exit_code=2)
    assert field_diff(a, b) == [
        "engine.provider: expected 'claude', your loop 'codex'",
        "exit_code: expected 1, your loop 2",
    ]
    assert field_diff(a, a) == []
    assert field_diff("x" * 500, 1)[0].endswith("…, your loop 1")
    assert len(field_diff("x" * 500, 1)[0]) < 130
