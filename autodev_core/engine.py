"""Engines: a provider, optionally one of its accounts, and optionally a model (SPEC A8, A9;
docs/participants.md, Accounts)."""

from __future__ import annotations

import re

import attrs

from .names import MODEL_CHARS, MODEL_FIRST
from .names import PROVIDERS as PROVIDERS  # the provider CLIs autodev knows, stated in `names`

_MODEL_RE = re.compile(f"^[{re.escape(MODEL_FIRST)}][{re.escape(MODEL_CHARS)}]*$")
#: An account's name (`claude@work`): a letter or digit, then letters, digits, `_`, `.`, `-`.
_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def _check_provider(_instance: object, _attribute: object, value: str) -> None:
    if value not in PROVIDERS:
        raise ValueError(f"unknown provider {value!r} (known: {', '.join(PROVIDERS)})")


def _check_model(_instance: object, _attribute: object, value: str | None) -> None:
    if value is not None and not _MODEL_RE.match(value):
        raise ValueError(f"malformed model name {value!r}")


def _check_account(_instance: object, _attribute: object, value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not _ACCOUNT_RE.match(value)):
        raise ValueError(f"malformed account name {value!r} (letters, digits, '_', '.', '-')")


def _model_rank(model: str | None) -> tuple[bool, str]:
    """How models order: no model before any model, then models as text. A model is never empty
    (`_MODEL_RE`), so two engines rank alike only when they are equal: the order is total and
    agrees with `==`."""
    return (model is not None, model or "")


@attrs.frozen(order=True, cache_hash=True, repr=False)  # a dict key on every step
class Engine:
    """Who owns a limit (A8): `claude` and `claude:sonnet` are two engines (A9), and so are
    `claude@work` and `claude@home`, two accounts of one provider (docs/participants.md,
    Accounts): a limit on one account never benches the other.

    Engines are ordered by provider (as text), then the engine without a model before any with
    one, then by model (as text), then the engine without an account before any with one, then
    by account: `sorted(participant.entries)` works, and the order is total and agrees with
    `==`. Equality and hash are the three fields as they are."""

    provider: str = attrs.field(validator=_check_provider)
    model: str | None = attrs.field(default=None, validator=_check_model, order=_model_rank)
    account: str | None = attrs.field(default=None, kw_only=True, validator=_check_account,
                                      order=_model_rank)

    @classmethod
    def parse(cls, text: str) -> Engine:
        """`Engine.parse("claude:sonnet") == Engine("claude", "sonnet")`,
        `Engine.parse("claude@work:opus") == Engine("claude", "opus", account="work")`; raises
        ValueError."""
        if not isinstance(text, str):
            raise ValueError(
                f"an engine is written as a string 'provider[@account][:model]', not {text!r}")
        raw = text.strip()
        head, sep, model = raw.partition(":")
        provider, at, account = head.strip().partition("@")
        if sep and not model.strip():
            raise ValueError(f"engine {text!r} has an empty model after ':'")
        if at and not account.strip():
            raise ValueError(f"engine {text!r} has an empty account after '@'")
        return cls(provider=provider.strip(), model=model.strip() if sep else None,
                   account=account.strip() if at else None)

    def __getstate__(self) -> dict[str, str | None]:
        """Pickled as its fields; an engine with no account as before accounts existed."""
        state = {"provider": self.provider, "model": self.model}
        if self.account is not None:
            state["account"] = self.account
        return state

    def __setstate__(self, state: object) -> None:
        """Unpickle, also an engine pickled before accounts existed (its two fields alone, as a
        tuple in attrs' older form or a mapping): it has no account."""
        if isinstance(state, tuple):
            state = dict(zip(("provider", "model", "account"), state, strict=False))
        fields = dict(state) if isinstance(state, dict) else {}
        for name in ("provider", "model", "account"):
            object.__setattr__(self, name, fields.get(name))
        object.__setattr__(self, "_attrs_cached_hash", None)  # hashed afresh on first use

    def __repr__(self) -> str:
        # As before accounts existed when there is none: a team naming none reads the same.
        account = "" if self.account is None else f", account={self.account!r}"
        return f"Engine(provider={self.provider!r}, model={self.model!r}{account})"

    def __str__(self) -> str:
        name = self.provider if self.account is None else f"{self.provider}@{self.account}"
        return name if self.model is None else f"{name}:{self.model}"

    @property
    def primary(self) -> Engine:
        """The provider alone, on the same account: the engine of a participant's primary
        entry (A9), and the account a usage window belongs to (`claude@work:opus` ->
        `claude@work`)."""
        return Engine(self.provider, account=self.account) if self.model is not None else self
