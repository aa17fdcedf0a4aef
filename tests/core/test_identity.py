"""Run identity (SPEC B1-B3)."""

from __future__ import annotations

import inspect

import attrs
import pytest

from autodev_core.control.identity import (
    NO_RUN,
    RecoveryHint,
    RunIdentity,
    check_owner,
    ids_equivalent,
    recovery_hints,
    resolve_active_identity,
)
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml


def test_B1_active_identity_comes_only_from_the_host() -> None:
    identity = resolve_active_identity(run_id=" run-7 ", aliases=["old-name"])
    assert identity.run_id == "run-7"
    assert identity.host_id == "run-7"
    assert identity.aliases == frozenset({"old-name"})
    # The resolver accepts no owner, queued or marker id: they cannot become active.
    params = set(inspect.signature(resolve_active_identity).parameters)
    assert params == {"run_id", "integrity_id", "aliases"}


def test_B1_stable_integrity_id_is_preferred_over_the_explicit_run_id() -> None:
    identity = resolve_active_identity(run_id="run-7", integrity_id="abc123")
    assert identity.run_id == "abc123"
    assert identity.known_ids == frozenset({"abc123", "run-7"})


def test_B1_nothing_stated_means_no_active_run() -> None:
    identity = resolve_active_identity(run_id="  ", aliases=["x"])
    assert identity == RunIdentity(aliases=frozenset({"x"}))
    assert not identity.is_active
    assert not NO_RUN.is_active


def test_B1_owner_queued_and_marker_ids_are_only_recovery_hints() -> None:
    identity = resolve_active_identity(run_id="run-7", aliases=["r7"])
    hints = recovery_hints(identity, owner_id="r7", queued_run_id="other", marker_run_id="run-7")
    assert hints == (RecoveryHint("owner", "r7"), RecoveryHint("marker", "run-7"))
    assert all(not isinstance(h, RunIdentity) for h in hints)
    assert recovery_hints(NO_RUN, owner_id="r7", queued_run_id="r7") == ()


def test_B1_recovery_hint_refuses_the_active_kind() -> None:
    with pytest.raises(ValueError):
        RecoveryHint("active", "run-7")


def test_B1_owner_validation() -> None:
    identity = resolve_active_identity(run_id="run-7", aliases=["r7"])
    assert check_owner(identity, "r7") == "matches"
    assert check_owner(identity, " run-7 ") == "matches"
    assert check_owner(identity, "") == "unowned"
    assert check_owner(identity, "run-8") == "mismatch"
    assert check_owner(NO_RUN, "run-7") == "no-active-run"


def test_B2_identity_is_a_frozen_value_passed_explicitly() -> None:
    identity = resolve_active_identity(run_id="run-7")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        identity.run_id = "run-8"  # type: ignore[misc]
    assert hash(identity) == hash(resolve_active_identity(run_id="run-7"))


def test_B3_equal_after_trimming() -> None:
    assert ids_equivalent(" run-7", "run-7 ")
    assert not ids_equivalent("run-7", "Run-7")


def test_B3_known_ids_of_the_identity_are_equivalent() -> None:
    identity = resolve_active_identity(run_id="run-7", integrity_id="abc", aliases=["old"])
    for a in ("run-7", "abc", "old"):
        for b in ("run-7", "abc", " old "):
            assert ids_equivalent(a, b, identity)
    assert not ids_equivalent("old", "stranger", identity)
    assert not ids_equivalent("abc", "old"), "without an identity only trimming applies"


def test_B3_empty_ids() -> None:
    identity = resolve_active_identity(run_id="run-7")
    assert ids_equivalent("", "  ")
    assert ids_equivalent(None, "", identity)
    assert not ids_equivalent("", "run-7", identity)
    assert not ids_equivalent("run-7", None, identity)


def test_B3_run_identity_names() -> None:
    identity = resolve_active_identity(run_id="run-7", aliases=["r7"])
    assert identity.names("r7")
    assert not identity.names("")
    assert not identity.names("r8")


def test_0_3_identity_values_round_trip() -> None:
    identity = resolve_active_identity(run_id="run-7", integrity_id="abc", aliases=["x", "y"])
    assert from_json(to_json(identity), RunIdentity) == identity
    assert from_yaml(to_yaml(identity), RunIdentity) == identity
    hint = RecoveryHint("queued", "run-7")
    assert from_json(to_json(hint), RecoveryHint) == hint


def test_aliases_must_be_a_collection() -> None:
    with pytest.raises(TypeError):
        RunIdentity(run_id="a", aliases="abc")
