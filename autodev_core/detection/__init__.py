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
from typing import TYPE_CHECKING, Any, Final

from .. import _lazy

#: Every public name of the reader, by the module it lives in: the one table of them;
#: `__all__` and `__getattr__` are read from it.
_EXPORTS: Final[dict[str, tuple[str, ...]]] = {
    "classification": (
        "OUTPUT_KINDS", "Classification", "LimitNotice", "OutputKind", "UsageReading",
    ),
    "posts": ("extract_post",),
    "reader": (
        "LIMIT_STATUSES", "PreparedClassification", "classify_output", "detect_limit",
        "detect_login_error", "detect_network_error", "prepare_classification",
    ),
}
_HOMES: Final = _lazy.homes(_EXPORTS)
__all__ = sorted(_HOMES)

if TYPE_CHECKING:
    # The same table as imports, which is all a type checker reads (`X as X`: re-exported);
    # tests/project/test_public_api.py holds the two equal.
    # isort: off
    from .classification import (
        OUTPUT_KINDS as OUTPUT_KINDS, Classification as Classification, LimitNotice as LimitNotice,
        OutputKind as OutputKind, UsageReading as UsageReading,
    )
    from .posts import extract_post as extract_post
    from .reader import (
        LIMIT_STATUSES as LIMIT_STATUSES, PreparedClassification as PreparedClassification,
        classify_output as classify_output, detect_limit as detect_limit,
        detect_login_error as detect_login_error, detect_network_error as detect_network_error,
        prepare_classification as prepare_classification,
    )
    # isort: on


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
