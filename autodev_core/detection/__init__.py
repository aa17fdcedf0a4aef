"""The notice reader: what a provider CLI's output means (SPEC A1-A7, A26, A32, A37, C1).

`classification` holds the values it returns (`Classification`, `LimitNotice`: all the
scheduler ever reads of an output, A1); `reader` the detectors (`classify_output`,
`detect_limit`, ...); `posts` what a call posted (`extract_post`). The private modules
cut the output into events and lines (`_streams`), find notices (`_notices`), read
resets (`_resets`) and network or login failures (`_failures`) in bounded windows
(`_bounded`).

The public names of these modules are offered here, imported on first use (PEP 562): `from
autodev_core.detection import classify_output` works as it did when `autodev_core.detection` was
a module (now `autodev_core.detection.reader`), and importing one of this package's modules
alone does not load the others.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import _lazy

if TYPE_CHECKING:
    from .classification import (
        OUTPUT_KINDS,
        Classification,
        LimitNotice,
        OutputKind,
        UsageReading,
    )
    from .posts import extract_post
    from .reader import (
        LIMIT_STATUSES,
        PreparedClassification,
        classify_output,
        detect_limit,
        detect_login_error,
        detect_network_error,
        prepare_classification,
    )

# Each public name and the module it lives in, imported on first use (PEP 562).
_HOMES: dict[str, str] = {
    "LIMIT_STATUSES": "reader",
    "OUTPUT_KINDS": "classification",
    "Classification": "classification",
    "LimitNotice": "classification",
    "OutputKind": "classification",
    "PreparedClassification": "reader",
    "classify_output": "reader",
    "detect_limit": "reader",
    "detect_login_error": "reader",
    "detect_network_error": "reader",
    "extract_post": "posts",
    "prepare_classification": "reader",
    "UsageReading": "classification",
}

__all__ = [
    "LIMIT_STATUSES",
    "OUTPUT_KINDS",
    "Classification",
    "LimitNotice",
    "OutputKind",
    "PreparedClassification",
    "UsageReading",
    "classify_output",
    "detect_limit",
    "detect_login_error",
    "detect_network_error",
    "extract_post",
    "prepare_classification",
]


def _module(name: str) -> ModuleType:
    if name == "classification":
        from . import classification

        return classification
    if name == "posts":
        from . import posts

        return posts
    if name == "reader":
        from . import reader

        return reader
    raise AttributeError(name)


def __getattr__(name: str) -> Any:
    return _lazy.attribute(__name__, globals(), _HOMES, _module, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), _HOMES)
