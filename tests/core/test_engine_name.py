"""An engine writes its name (A8, A9: `provider` or `provider:model`) however it was made — a
copy, a deep copy, unpickled by any protocol, `attrs.evolve`, read back from JSON — in `str()`
and in every log line naming it; what compares, hashes, orders, shows or stores an engine sees
its provider and model alone.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.engine import Engine
from autodev_core.scheduler import logs
from autodev_core.serialization import from_json, to_json

models = st.none() | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._\-\[\]/@]{0,11}", fullmatch=True)
engines = st.builds(Engine, provider=st.sampled_from(("claude", "codex", "agy")), model=models)


def name_of(engine: Engine) -> str:
    """A8/A9, stated here on its own: the provider, then `:model` when there is one."""
    return engine.provider if engine.model is None else engine.provider + ":" + engine.model


REMAKES: dict[str, Callable[[Engine], Engine]] = {
    "as built": lambda e: e,
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    **{f"pickle {p}": (lambda e, p=p: pickle.loads(pickle.dumps(e, protocol=p)))  # type: ignore[misc]
       for p in range(pickle.HIGHEST_PROTOCOL + 1)},
    "evolve": lambda e: attrs.evolve(e),
    "evolve to another model": lambda e: attrs.evolve(e, model="other"),
    "parse": lambda e: Engine.parse(str(e)),
    "json": lambda e: from_json(to_json(e), Engine),
}


@pytest.mark.parametrize("remake", REMAKES.values(), ids=list(REMAKES))
@given(engine=engines)
def test_A9_an_engine_writes_its_name_however_it_was_made(
    remake: Callable[[Engine], Engine], engine: Engine
) -> None:
    made = remake(engine)
    name = name_of(made)
    assert str(made) == name
    assert f"{made}" == name
    assert logs.posted_via("ana", made) == f"ana posted via {name}"
    assert logs.limited_until(made, "10:00") == f"{name} limited until 10:00"
    assert logs.hop_limited("ana", made, engine) == f"ana: {name} limited → {name_of(engine)}"
    assert logs.failed("ana", made, "x", "9:00") == (
        f"ana failed on {name} (x); next attempt at 9:00")
    assert logs.lifted("ana", made, False) == f"ana: limit lifted — back on {name}"


@given(engine=engines, other=engines)
def test_an_engine_is_its_provider_and_model_alone(engine: Engine, other: Engine) -> None:
    """eq, hash, order, repr, the fields and the stored form are the provider and model alone
    for an engine naming no account (docs/participants.md, Accounts: the account is the third
    field, None here, and an engine without one reads, shows and pickles as before)."""
    assert [f.name for f in attrs.fields(Engine)] == ["provider", "model", "account"]
    assert engine.account is None and other.account is None
    assert attrs.asdict(engine) == {"provider": engine.provider, "model": engine.model,
                                    "account": None}
    assert repr(engine) == f"Engine(provider={engine.provider!r}, model={engine.model!r})"
    assert to_json(engine) == f"\"{name_of(engine)}\""
    same_fields = (engine.provider, engine.model) == (other.provider, other.model)
    assert (engine == other) is same_fields
    if same_fields:
        assert hash(engine) == hash(other)
    if engine.model is not None and other.model is not None:
        assert (engine < other) is ((engine.provider, engine.model) < (other.provider, other.model))
    state: Any = engine.__getstate__()
    assert state == {"provider": engine.provider, "model": engine.model}


def test_an_engine_pickled_by_the_old_attrs_form_reads_back_with_its_name() -> None:
    """attrs' older pickled state was the fields' values in order: it still unpickles whole."""
    engine = object.__new__(Engine)
    engine.__setstate__(("claude", "sonnet"))
    assert engine == Engine("claude", "sonnet")
    assert str(engine) == "claude:sonnet"
