"""SPEC D: the public contract, exported from `autodev_core` with the documented shapes."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import autodev_core
from autodev_core import (
    DEFAULT_TIERS,
    Accepted,
    Engine,
    PersistenceState,
    Queued,
    TierRoles,
    classify_output,
    detect_limit,
    parse_participant,
    reduce_persistence,
    tier_role,
)

SPEC_D_NAMES = (
    "Engine", "parse_participant", "ConfigError", "detect_limit", "LimitNotice",
    "classify_output", "PersistenceState", "Queued", "Accepted", "reduce_persistence",
    "TierRoles", "DEFAULT_TIERS", "tier_role",
)


def test_D_every_name_is_exported_from_the_package() -> None:
    for name in SPEC_D_NAMES:
        assert name in autodev_core.__all__, name
        assert getattr(autodev_core, name) is not None


def test_D_keyword_only_signatures() -> None:
    def kwonly(function: object) -> set[str]:
        params = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
        return {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}

    assert {"id", "source"} <= kwonly(parse_participant)
    for detector in (detect_limit, classify_output):
        assert {"stdout", "stderr", "exit_code", "now", "local_tz"} <= kwonly(detector)
    assert "tiers" in kwonly(reduce_persistence)


def test_D_engine_and_participant() -> None:
    assert Engine.parse("claude:sonnet") == Engine(provider="claude", model="sonnet")
    assert str(Engine.parse("claude:sonnet")) == "claude:sonnet"
    p = parse_participant("---\nprovider: codex\ngate: true\n---\nbody", id="rui")
    assert (p.id, p.provider, p.model, p.failover, p.gate, p.prompt) == (
        "rui", "codex", None, (), True, "body")


def test_D_detectors_return_the_documented_values() -> None:
    now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    notice = detect_limit("claude", stdout="Claude AI usage limit reached|1796200000",
                          now=now, local_tz=UTC)
    assert notice is not None and notice.provider == "claude"
    assert notice.reset_at == datetime.fromtimestamp(1796200000, UTC)
    assert classify_output("codex", stderr="getaddrinfo ENOTFOUND api.openai.com", exit_code=1,
                           now=now, local_tz=UTC).kind == "network"
    assert classify_output("codex", stdout="all good", exit_code=0, now=now,
                           local_tz=UTC).kind == "other"


def test_D_persistence_defaults_and_tiers() -> None:
    state = PersistenceState()
    assert state.pending_persist is False and state.writes_blocked is False
    assert state.last_accepted_revision == 0 and state.queued_revision == 0
    assert state.accepted_tier == "none" and state.last_recoverable_tier == "none"
    assert state.queued_run_id == ""
    assert TierRoles(
        canonical=frozenset({"sqlite"}), recovery_only=frozenset({"shadow", "checkpoint"}),
        replica_only=frozenset({"search"}),
    ) == DEFAULT_TIERS
    assert [tier_role(t) for t in (" SQLite ", "shadow", "search", "none", "")] == [
        "canonical", "recovery-only", "replica-only", "unknown", "unknown"]
    queued = reduce_persistence(state, Queued(2, "run-a"))
    assert queued.pending_persist and queued.writes_blocked and queued.queued_revision == 2
    done = reduce_persistence(queued, Accepted("sqlite", 2))
    assert not done.pending_persist and done.last_accepted_revision == 2
    assert reduce_persistence(queued, Accepted("shadow", 5)) == queued


def test_27_the_public_names_are_one_table() -> None:
    """`autodev_core._EXPORTS` (home module -> names) is the one list of the public names:
    `__all__` and the lazy lookup are read from it, and the imports a type checker reads
    (`if TYPE_CHECKING:`, each `X as X` so that it is re-exported) say the same, name for name
    and module for module."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(autodev_core.__file__).read_text(encoding="utf-8"))
    (block,) = [node for node in tree.body if isinstance(node, ast.If)
                and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    imported: dict[str, tuple[str, ...]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        assert all(alias.asname == alias.name for alias in node.names), node.module
        imported[node.module] = tuple(alias.name for alias in node.names)
    assert imported == autodev_core._EXPORTS
    names = [name for group in autodev_core._EXPORTS.values() for name in group]
    assert len(names) == len(set(names))
    assert sorted(autodev_core.__all__) == sorted(names) == sorted(set(dir(autodev_core))
                                                                 & set(names))
    for home, group in autodev_core._EXPORTS.items():
        module = __import__(f"autodev_core.{home}", fromlist=["_"])
        for name in group:
            assert getattr(autodev_core, name) is getattr(module, name), name
