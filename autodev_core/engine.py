"""Engines: a provider and, optionally, a model of it (SPEC A8, A9)."""

from __future__ import annotations

import re

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


@attrs.frozen(order=True, cache_hash=True)  # an engine is a dict key on every step
class Engine:
    """Who owns a limit (A8): `claude` and `claude:sonnet` are two engines (A9).

    Engines are ordered by provider (as text), then the engine without a model before any with
    one, then by model (as text): `sorted(participant.entries)` works. Equality and hash are the
    two fields as they are."""

    provider: str = attrs.field(validator=_check_provider)
    model: str | None = attrs.field(default=None, validator=_check_model, order=_model_rank)

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
        return self.provider if self.model is None else f"{self.provider}:{self.model}"

    @property
    def primary(self) -> Engine:
        """The provider alone: the engine of a participant's primary entry (A9)."""
        return Engine(self.provider) if self.model is not None else self
