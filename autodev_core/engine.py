"""Engines: a provider and, optionally, a model of it (SPEC A8, A9)."""

from __future__ import annotations

import re
from typing import Any

import attrs

from .names import MODEL_CHARS, MODEL_FIRST
from .names import PROVIDERS as PROVIDERS  # the provider CLIs autodev knows, stated in `names`

_MODEL_RE = re.compile(f"^[{re.escape(MODEL_FIRST)}][{re.escape(MODEL_CHARS)}]*$")


def _check_provider(_instance: object, _attribute: object, value: str) -> None:
    if value not in PROVIDERS:
        raise ValueError(f"unknown provider {value!r} (known: {', '.join(PROVIDERS)})")


def _check_model(_instance: object, _attribute: object, value: str | None) -> None:
    if value is not None and not _MODEL_RE.match(value):
        raise ValueError(f"malformed model name {value!r}")


def _model_rank(model: str | None) -> tuple[bool, str]:
    """How models order: no model before any model, then models as text. A model is never empty
    (`_MODEL_RE`), so two engines rank alike only when they are equal: the order is total and
    agrees with `==`."""
    return (model is not None, model or "")


_setattr = object.__setattr__


class _Named:
    """A slot for an engine's name (`str(engine)`), outside attrs' fields: eq, hash, order,
    repr, `attrs.fields` and the serialized form do not see it. Written once when an engine is
    built, it is read by the scheduler's log lines, where calling `__str__` cost more than the
    rest of the line (issue 13)."""

    __slots__ = ("_name",)
    _name: str


@attrs.frozen(order=True)
class Engine(_Named):
    """Who owns a limit (A8): `claude` and `claude:sonnet` are two engines (A9).

    Engines are ordered by provider (as text), then the engine without a model before any with
    one, then by model (as text): `sorted(participant.entries)` works. Equality and hash are the
    two fields as they are."""

    provider: str = attrs.field(validator=_check_provider)
    model: str | None = attrs.field(default=None, validator=_check_model, order=_model_rank)

    def __attrs_post_init__(self) -> None:
        _setattr(self, "_name", self.provider if self.model is None
                 else f"{self.provider}:{self.model}")

    # attrs' own pair for slotted classes, and the name: a copy or an unpickled engine has it
    def __getstate__(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model}

    def __setstate__(self, state: dict[str, Any] | tuple[Any, ...]) -> None:
        if isinstance(state, tuple):  # attrs' older form: the fields' values in order
            state = dict(zip(("provider", "model"), state, strict=False))
        for name in ("provider", "model"):
            if name in state:
                _setattr(self, name, state[name])
        self.__attrs_post_init__()

    @classmethod
    def parse(cls, text: str) -> Engine:
        """`Engine.parse("claude:sonnet") == Engine("claude", "sonnet")`; raises ValueError."""
        if not isinstance(text, str):
            raise ValueError(f"an engine is written as a string 'provider[:model]', not {text!r}")
        raw = text.strip()
        provider, sep, model = raw.partition(":")
        provider = provider.strip()
        if sep and not model.strip():
            raise ValueError(f"engine {text!r} has an empty model after ':'")
        return cls(provider=provider, model=model.strip() if sep else None)

    def __str__(self) -> str:
        return self._name

    @property
    def primary(self) -> Engine:
        """The provider alone: the engine of a participant's primary entry (A9)."""
        return Engine(self.provider) if self.model is not None else self
