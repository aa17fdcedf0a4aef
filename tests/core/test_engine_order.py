"""Engines have a total order (A8, A9): an orchestrator may sort them.

`claude` and `claude:sonnet` are two engines (A9). An orchestrator that sorts a participant's
entries (`sorted(participant.entries)`) or a set of engines it saw limited must get a sorted
list, not a TypeError from comparing a missing model with a model. The order, stated here on its
own: by provider (as text), then the engine without a model first, then by model (as text).
Equality, hash, repr and the stored form are not touched by it (tests/core/test_engine_name.py).
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.engine import Engine
from autodev_core.participant import Participant

models = st.none() | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._\-\[\]/@]{0,5}", fullmatch=True)
# few providers and short models: equal providers and a missing model against a model are common
engines = st.builds(Engine, provider=st.sampled_from(("claude", "codex", "agy")), model=models)


def rank(engine: Engine) -> tuple[str, bool, str]:
    """The documented order: provider, then no model before any model, then the model."""
    return (engine.provider, engine.model is not None, engine.model or "")


def test_a_participants_entries_sort_with_and_without_a_model() -> None:
    chain = (Engine("codex"), Engine.parse("claude:sonnet"), Engine.parse("claude:haiku"))
    ana = Participant("ana", "claude", failover=chain)
    assert sorted(ana.entries) == [
        Engine("claude"), Engine("claude", "haiku"), Engine("claude", "sonnet"), Engine("codex"),
    ]
    assert Engine("claude") < Engine("claude", "sonnet")
    assert Engine("claude", "sonnet") > Engine("claude")
    assert Engine("codex") >= Engine("claude", "sonnet")
    assert max(ana.entries) == Engine("codex")
    assert min([Engine("agy", "x"), Engine("agy")]) == Engine("agy")


@given(st.lists(engines, max_size=12))
def test_sorting_any_list_of_engines_works_and_follows_the_documented_order(
    items: list[Engine],
) -> None:
    ordered = sorted(items)
    assert [rank(e) for e in ordered] == sorted(rank(e) for e in items)
    assert sorted(ordered, reverse=True) == ordered[::-1]
    # a sort by comparisons alone (no key) agrees: the order is one order, whatever the start
    def cmp(a: Engine, b: Engine) -> int:
        return (a > b) - (a < b)

    by_cmp = sorted(items, key=functools.cmp_to_key(cmp))
    assert by_cmp == ordered


@given(engines, engines)
def test_the_order_is_total_and_consistent_with_equality(a: Engine, b: Engine) -> None:
    assert [a < b, a == b, a > b].count(True) == 1
    assert (a <= b) is (a < b or a == b)
    assert (a >= b) is (a > b or a == b)
    assert (a < b) is (b > a)
    assert (a < b) is (rank(a) < rank(b))
    if not a < b and not b < a:
        assert a == b and hash(a) == hash(b)


@given(engines, engines, engines)
def test_the_order_is_transitive(a: Engine, b: Engine, c: Engine) -> None:
    if a <= b and b <= c:
        assert a <= c
    if a < b and b < c:
        assert a < c


@pytest.mark.parametrize("other", [("claude", None), "claude", None, 1])
def test_an_engine_is_not_ordered_against_anything_else(other: object) -> None:
    engine = Engine("claude")
    assert engine != other
    with pytest.raises(TypeError):
        engine < other  # type: ignore[operator]  # noqa: B015
    with pytest.raises(TypeError):
        engine >= other  # type: ignore[operator]  # noqa: B015
