"""Participant files and engines (SPEC A9, A10, A13, C5, D)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import ConfigError, Engine, Participant, parse_participant
from autodev_core.engine import PROVIDERS
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml

ANA = """---
provider: claude
model: opus
failover: [codex, "claude:sonnet"]
---
You review every change.
"""


def test_D_engine_parse_and_str_round_trip() -> None:
    assert Engine.parse("claude:sonnet") == Engine(provider="claude", model="sonnet")
    assert Engine.parse(" codex ") == Engine("codex")
    assert str(Engine("claude", "sonnet")) == "claude:sonnet"
    assert str(Engine("agy")) == "agy"


@pytest.mark.parametrize("bad", ["", "gpt", "claude:", ":sonnet", "claude:so net"])
def test_D_engine_parse_rejects_malformed_entries(bad: str) -> None:
    with pytest.raises(ValueError):
        Engine.parse(bad)


@given(
    provider=st.sampled_from(PROVIDERS),
    model=st.none() | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._\-]{0,20}", fullmatch=True),
)
def test_A9_engine_text_round_trips(provider: str, model: str | None) -> None:
    engine = Engine(provider, model)
    assert Engine.parse(str(engine)) == engine


def test_A9_primary_engine_is_the_provider_alone() -> None:
    ana = parse_participant(ANA, id="ana")
    assert ana.primary == Engine("claude")
    assert ana.entries == (Engine("claude"), Engine("codex"), Engine("claude", "sonnet"))


def test_A10_participant_file_fields() -> None:
    ana = parse_participant(ANA, id="ana", source="team/ana.md")
    assert (ana.id, ana.provider, ana.model, ana.gate) == ("ana", "claude", "opus", False)
    assert ana.failover == (Engine("codex"), Engine("claude", "sonnet"))
    assert ana.prompt == "You review every change."


def test_A10_no_default_chain() -> None:
    rui = parse_participant("---\nprovider: codex\n---\n", id="rui")
    assert rui.failover == () and rui.model is None and rui.prompt == ""


def test_A13_pin_applies_on_the_primary_only() -> None:
    ana = parse_participant(ANA, id="ana")
    assert ana.model_for(Engine("claude")) == "opus"
    assert ana.model_for(Engine("codex")) is None
    assert ana.model_for(Engine("claude", "sonnet")) == "sonnet"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("no front matter here\n", 1, "no YAML front matter"),
        ("---\nprovider: claude\n", 1, "not closed"),
        ("---\nprovider: [claude\n---\n", 2, "invalid YAML"),
        ("---\nprovider: gpt\n---\n", 2, "unknown provider 'gpt'"),
        ("---\nmodel: opus\n---\n", 1, "missing required key 'provider'"),
        ("---\nprovider: claude\nmodle: opus\n---\n", 3, "unknown key 'modle'"),
        ("---\nprovider: claude\ngate: maybe\n---\n", 3, "'gate' must be true or false"),
        ("---\nprovider: claude\nfailover: codex\n---\n", 3, "must be a list"),
        (
            "---\nprovider: claude\nfailover:\n  - codex\n  - 'foo:bar'\n---\n",
            5,
            "bad failover entry 'foo:bar'",
        ),
        ("---\nprovider: claude\nfailover: [codex, 3]\n---\n", 3, "failover entry 2"),
        ("\n\n---\nprovider: claude\nmodel: 7\n---\n", 5, "'model' must be a non-empty string"),
        ("---\n- a\n- b\n---\n", 2, "must be a mapping"),
        # Issue 9 item 10: YAML keeps the last of a repeated key silently; a file must not.
        (
            "---\nprovider: claude\nmodel: opus\nprovider: codex\n---\n",
            4,
            "duplicate key 'provider' (first given on line 2)",
        ),
        ("\n---\ngate: true\nprovider: agy\ngate: false\n---\n", 5, "duplicate key 'gate'"),
    ],
)
def test_C5_bad_files_name_the_source_and_line(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_participant(text, id="ana", source="team/ana.md")
    assert str(caught.value).startswith(f"team/ana.md:{line}: ")
    assert words in str(caught.value)
    assert caught.value.line == line and caught.value.source == "team/ana.md"


def test_C5_a_utf8_byte_order_mark_before_the_front_matter_is_accepted() -> None:
    # Issue 9 item 10: some editors write one; it was read as text before the first `---`.
    ana = parse_participant("\ufeff---\nprovider: claude\nmodel: opus\n---\nReview.\n", id="ana")
    assert (ana.provider, ana.model, ana.prompt) == ("claude", "opus", "Review.")


def test_C5_malformed_id_is_refused() -> None:
    with pytest.raises(ConfigError):
        parse_participant(ANA, id="../etc", source="x.md")


@given(text=st.text(max_size=300))
def test_C5_arbitrary_text_is_a_participant_or_a_config_error(text: str) -> None:
    try:
        result = parse_participant(text, id="p")
    except ConfigError as exc:
        assert exc.source == "<string>"
    else:
        assert isinstance(result, Participant)


@given(
    provider=st.sampled_from(PROVIDERS),
    chain=st.lists(st.sampled_from(["claude", "codex", "agy", "claude:sonnet", "codex:o3"])),
    gate=st.booleans(),
    prompt=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=50),
)
def test_0_3_participants_round_trip_through_json_and_yaml(
    provider: str, chain: list[str], gate: bool, prompt: str
) -> None:
    value = Participant(
        id="p1",
        provider=provider,
        model="m",
        failover=tuple(Engine.parse(c) for c in chain),
        gate=gate,
        prompt=prompt,
    )
    assert from_json(to_json(value), Participant) == value
    assert from_yaml(to_yaml(value), Participant) == value


def test_0_3_sets_are_written_in_one_order_whatever_the_hash_seed() -> None:
    import subprocess
    import sys

    code = (
        "from autodev_core.serialization import to_json;"
        "from autodev_core.scheduler import SchedulerConfig;"
        "from autodev_core import parse_participant;"
        "p = parse_participant('---\\nprovider: codex\\n---\\n', id='rui');"
        "print(to_json(SchedulerConfig(team=(p,), installed={'agy', 'codex', 'claude'})))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={"PYTHONHASHSEED": str(seed), "PATH": ""},
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(outputs) == 1
    assert '"installed":["agy","claude","codex"]' in outputs.pop()
