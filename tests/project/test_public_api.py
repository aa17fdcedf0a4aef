"""SPEC D: the public contract, exported from `autodev_core` with the documented shapes."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import pytest

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


@pytest.mark.parametrize("package", ["autodev_core", "autodev_core.detection",
                                     "autodev_core.simulation"])
def test_27_the_public_names_are_one_table(package: str) -> None:
    """A package's `_EXPORTS` (home module -> names) is the one list of its public names:
    `__all__` and the lazy lookup are read from it, and the imports a type checker reads
    (`if TYPE_CHECKING:`, each `X as X` so that it is re-exported) say the same, name for name
    and module for module."""
    import ast
    import importlib
    from pathlib import Path

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    (block,) = [node for node in tree.body if isinstance(node, ast.If)
                and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    imported: dict[str, tuple[str, ...]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        assert all(alias.asname == alias.name for alias in node.names), node.module
        imported[node.module] = tuple(alias.name for alias in node.names)
    assert imported == module._EXPORTS
    names = [name for group in module._EXPORTS.values() for name in group]
    assert len(names) == len(set(names))
    assert sorted(module.__all__) == sorted(names)
    assert set(dir(module)) >= set(names)
    for home, group in module._EXPORTS.items():
        source = importlib.import_module(f"{package}.{home}")
        for name in group:
            assert getattr(module, name) is getattr(source, name), name
