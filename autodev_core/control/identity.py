"""Run identity: which run is active, and when two run ids name the same run (SPEC B1-B3).

Only what the host states makes the active identity (B1): its explicit run id, its stable
integrity id and the aliases it knows. The other three kinds — the *owner* written inside the
loaded state, the *queued* run of a pending write, the *marker* run of the last commit marker —
are inputs to validation and recovery. They have their own type (`RecoveryHint`), so none of
them can be passed where a `RunIdentity` is expected: substitution is a type error, not a bug
waiting to happen.

Identity is resolved once per operation and handed to every decision explicitly (B2): there is
no module-level "current run" here or anywhere in the core.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import attrs

#: The four kinds of run identity (B1). Only "active" may name the current run.
IdentityKind = Literal["active", "owner", "queued", "marker"]
IDENTITY_KINDS: tuple[str, ...] = ("active", "owner", "queued", "marker")
#: The kinds used only to validate and recover (B1).
RECOVERY_KINDS: tuple[str, ...] = ("owner", "queued", "marker")


def normalize_run_id(value: str | None) -> str:
    """A run id as compared everywhere: trimmed; None is the empty id (B3)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"a run id is a string, not {value!r}")
    return value.strip()


def _aliases(values: Iterable[str]) -> frozenset[str]:
    if isinstance(values, str):
        raise TypeError("aliases are a collection of run ids, not one string")
    return frozenset(i for i in (normalize_run_id(v) for v in values) if i)


@attrs.frozen
class RunIdentity:
    """The active run, as the host states it (B1), resolved once per operation (B2).

    `run_id` is the id everything is persisted under (the integrity id when the host has one,
    else its explicit run id; see `resolve_active_identity`). `host_id` is the host's explicit
    run id, `integrity_id` its stable integrity id, `aliases` other ids the host knows this run
    by. An identity with an empty `run_id` means "no active run".
    """

    run_id: str = attrs.field(default="", converter=normalize_run_id)
    host_id: str = attrs.field(default="", converter=normalize_run_id)
    integrity_id: str = attrs.field(default="", converter=normalize_run_id)
    aliases: frozenset[str] = attrs.field(default=frozenset(), converter=_aliases)

    @property
    def known_ids(self) -> frozenset[str]:
        """Every non-empty id naming this run: active, host, integrity, aliases (B3)."""
        ids = {self.run_id, self.host_id, self.integrity_id, *self.aliases}
        return frozenset(i for i in ids if i)

    @property
    def is_active(self) -> bool:
        """True when the host names a run at all."""
        return bool(self.run_id)

    def names(self, run_id: str | None) -> bool:
        """True when `run_id` is equivalent to this run's active id (B3)."""
        return ids_equivalent(self.run_id, run_id, self)


NO_RUN = RunIdentity()


def resolve_active_identity(
    *,
    run_id: str | None = None,
    integrity_id: str | None = None,
    aliases: Iterable[str] = (),
) -> RunIdentity:
    """The active identity from what the host states, and nothing else (B1).

    The stable integrity id wins when the host has one, since it survives a rename of the run;
    otherwise the explicit run id. Aliases only widen what is recognised as this run (B3); they
    never pick the active id, and neither do owner, queued or marker ids, which this function
    does not accept at all. Nothing stated → `NO_RUN`.
    """
    host = normalize_run_id(run_id)
    integrity = normalize_run_id(integrity_id)
    return RunIdentity(
        run_id=integrity or host,
        host_id=host,
        integrity_id=integrity,
        aliases=_aliases(aliases),
    )


def ids_equivalent(a: str | None, b: str | None, identity: RunIdentity | None = None) -> bool:
    """B3: equal after trimming, or both among `identity`'s known ids.

    Two empty ids are equal; an empty id never equals a non-empty one. Reflexive and symmetric.
    """
    left, right = normalize_run_id(a), normalize_run_id(b)
    if left == right:
        return True
    if not left or not right or identity is None:
        return False
    known = identity.known_ids
    return left in known and right in known


@attrs.frozen
class RecoveryHint:
    """A run id seen somewhere other than the host: owner, queued or marker (B1).

    Used only to validate and recover; there is deliberately no way to turn one into a
    `RunIdentity`.
    """

    kind: IdentityKind = attrs.field(validator=attrs.validators.in_(RECOVERY_KINDS))
    run_id: str = attrs.field(converter=normalize_run_id)


OwnerCheck = Literal["matches", "unowned", "mismatch", "no-active-run"]


def check_owner(identity: RunIdentity, owner_id: str | None) -> OwnerCheck:
    """Validate the owner id written inside loaded state against the active run (B1, B3).

    "unowned" (no owner written) lets a caller adopt the state for the active run; "mismatch"
    means the state belongs to another run and must not be loaded into this one.
    """
    if not identity.is_active:
        return "no-active-run"
    owner = normalize_run_id(owner_id)
    if not owner:
        return "unowned"
    return "matches" if identity.names(owner) else "mismatch"


def recovery_hints(
    identity: RunIdentity,
    *,
    owner_id: str | None = None,
    queued_run_id: str | None = None,
    marker_run_id: str | None = None,
) -> tuple[RecoveryHint, ...]:
    """The owner, queued and marker ids that name the active run, for recovery (B1).

    Ids naming another run are dropped: recovering them into the active run would be the
    substitution B1 forbids. With no active run nothing is returned.
    """
    if not identity.is_active:
        return ()
    seen: tuple[tuple[IdentityKind, str | None], ...] = (
        ("owner", owner_id), ("queued", queued_run_id), ("marker", marker_run_id),
    )
    return tuple(
        RecoveryHint(kind, normalize_run_id(rid))
        for kind, rid in seen
        if normalize_run_id(rid) and identity.names(rid)
    )
