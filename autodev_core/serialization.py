"""One cattrs converter per format: JSON for disk, YAML for people (SPEC 0.3).

Every state, event and effect of the core round-trips losslessly through both. Aware datetimes
are written as ISO 8601 with their offset (naive ones are refused), durations as seconds, and the
members of a union (events, effects) carry a `type` tag so persisted JSON names its own type.
Only text is produced or read here: writing it anywhere is the shell's job.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_origin

from .engine import Engine

if TYPE_CHECKING:
    import cattrs

# cattrs and yaml are imported, and the converters built, on first use: a command that reads
# no state (`autodev --help`) does not pay for them (docs/performance.md, cold start).

T = TypeVar("T")

TAG = "type"


def _unstructure_datetime(value: datetime) -> str:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value!r}: autodev only stores aware datetimes")
    return value.isoformat()


def _structure_datetime(value: Any, _cls: type) -> datetime:
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        parsed = datetime.fromisoformat(value)
    else:
        raise ValueError(f"expected an ISO 8601 date-time, not {value!r}")
    if parsed.tzinfo is None:
        raise ValueError(f"date-time {value!r} has no UTC offset")
    return parsed


def _unstructure_timedelta(value: timedelta) -> float:
    return value.total_seconds()


def _structure_timedelta(value: Any, _cls: type) -> timedelta:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a duration in seconds, not {value!r}")
    return timedelta(seconds=value)


def _structure_engine(value: Any, _cls: type) -> Engine:
    if not isinstance(value, str):
        raise ValueError(f"an engine is written 'provider[:model]', not {value!r}")
    return Engine.parse(value)


def _is_frozenset(cls: Any) -> bool:
    return cls is frozenset or get_origin(cls) is frozenset


def _sorted_set_hook(converter: cattrs.Converter) -> Callable[[Any], Any]:
    def factory(cls: Any) -> Callable[[frozenset[Any]], list[Any]]:
        args = get_args(cls)
        element = args[0] if args else Any

        def unstructure(value: frozenset[Any]) -> list[Any]:
            # A set has no order; written sorted, the same value is the same text in every
            # process whatever its hash seed.
            items = [converter.unstructure(item, unstructure_as=element) for item in value]
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))

        return unstructure

    return factory


def _configure(converter: cattrs.Converter) -> cattrs.Converter:
    converter.register_unstructure_hook_factory(_is_frozenset, _sorted_set_hook(converter))
    converter.register_unstructure_hook(datetime, _unstructure_datetime)
    converter.register_structure_hook(datetime, _structure_datetime)
    converter.register_unstructure_hook(timedelta, _unstructure_timedelta)
    converter.register_structure_hook(timedelta, _structure_timedelta)
    # An engine is written as people write it in participant files: "claude:sonnet" (A9).
    converter.register_unstructure_hook(Engine, str)
    converter.register_structure_hook(Engine, _structure_engine)
    return converter


def _tag_of(cls: type) -> str:
    return cls.__name__


_UNIONS: list[Any] = []
_BUILT: dict[str, cattrs.Converter] = {}  # "json", "yaml": each built on first use


def _tag(union: Any, converter: cattrs.Converter) -> None:
    from cattrs.strategies import configure_tagged_union

    configure_tagged_union(union, converter, tag_generator=_tag_of, tag_name=TAG)


def _converter(kind: str) -> cattrs.Converter:
    converter = _BUILT.get(kind)
    if converter is None:
        if kind == "json":
            from cattrs.preconf.json import make_converter as make_json

            converter = _configure(make_json())
        else:
            from cattrs.preconf.pyyaml import make_converter as make_yaml

            converter = _configure(make_yaml())
        for union in _UNIONS:
            _tag(union, converter)
        _BUILT[kind] = converter
    return converter


def __getattr__(name: str) -> Any:
    """`json_converter`, `yaml_converter` and `CONVERTERS`, built on first use."""
    if name == "json_converter":
        return _converter("json")
    if name == "yaml_converter":
        return _converter("yaml")
    if name == "CONVERTERS":
        return (_converter("json"), _converter("yaml"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_union(union: Any) -> None:
    """Let every converter (un)structure `union` (e.g. `Event`) with a `type` tag."""
    _UNIONS.append(union)
    for converter in _BUILT.values():
        _tag(union, converter)


def to_json(value: Any, *, as_type: Any = None) -> str:
    """JSON text for `value` (pass the union as `as_type` to tag a union member)."""
    json_converter = _converter("json")
    raw = (
        json_converter.unstructure(value, unstructure_as=as_type)
        if as_type
        else (json_converter.unstructure(value))
    )
    return json.dumps(raw, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


#: The field types a flat record may hold, as its annotations spell them (the core's modules
#: use `from __future__ import annotations`, so attrs keeps them as text).
_PLAIN_TYPES: dict[Any, type] = {"bool": bool, "int": int, "str": str, bool: bool, int: int,
                                 str: str}
#: Per class: each field's type and the fields without a default, or None when not flat.
_FLAT: dict[Any, tuple[dict[str, type], frozenset[str]] | None] = {}
_NOT_FLAT: Any = object()


def _flat_fields(cls: Any) -> tuple[dict[str, type], frozenset[str]] | None:
    """For an attrs class whose every field is a bool, an int or a str (`PersistenceState`):
    each field's type and the fields that have no default. None for any other class."""
    if cls in _FLAT:
        return _FLAT[cls]
    found: tuple[dict[str, type], frozenset[str]] | None = None
    fields = getattr(cls, "__attrs_attrs__", None)
    if isinstance(fields, tuple):
        from attrs import NOTHING

        types = {f.name: _PLAIN_TYPES.get(f.type) for f in fields}
        if all(f.init and f.alias == f.name for f in fields) and all(types.values()):
            found = ({name: kind for name, kind in types.items() if kind is not None},
                     frozenset(f.name for f in fields if f.default is NOTHING))
    _FLAT[cls] = found
    return found


def _structure_flat(data: Any, cls: Any) -> Any:
    """`cls(**data)` when `data` holds exactly what the converter would pass on unchanged: only
    known fields, every required one, each of its field's exact type. Then the converter's
    result is the same value, without loading cattrs or generating code (a short command such
    as `autodev status` reads its persistence state this way). Anything else, or a
    value the class refuses, is left to the converter, which decides and words the error."""
    flat = _flat_fields(cls)
    if flat is None or not isinstance(data, dict):
        return _NOT_FLAT
    types, required = flat
    if not required <= data.keys():
        return _NOT_FLAT
    if any(type(value) is not types.get(key) for key, value in data.items()):
        return _NOT_FLAT
    try:
        return cls(**data)
    except Exception:
        return _NOT_FLAT


def from_json(text: str | bytes, cls: Any) -> Any:
    data = json.loads(text)
    value = _structure_flat(data, cls)
    return _converter("json").structure(data, cls) if value is _NOT_FLAT else value


#: Characters YAML reads as line breaks that PyYAML writes bare in a plain or single-quoted
#: scalar, where a reader folds them into a space: only a double-quoted scalar escapes them
#: (\N, \L, \P). Text holding one is written double-quoted (SPEC 0.3).
_BARE_BREAKS = frozenset("\x85\u2028\u2029")
_DUMPER: Any = None


def _yaml_dumper() -> Any:
    global _DUMPER
    if _DUMPER is None:
        import yaml

        class Dumper(yaml.SafeDumper):
            pass

        def represent_str(dumper: Any, text: str) -> Any:
            style = '"' if not _BARE_BREAKS.isdisjoint(text) else None
            return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)

        Dumper.add_representer(str, represent_str)
        _DUMPER = Dumper
    return _DUMPER


def dump_yaml(data: Any, **options: Any) -> str:
    """YAML text for plain data (dicts, lists, scalars) that reads back equal, every character
    of every string kept (SPEC 0.3)."""
    import yaml

    return str(yaml.dump(data, Dumper=_yaml_dumper(), allow_unicode=True, sort_keys=False,
                         **options))


def to_yaml(value: Any, *, as_type: Any = None) -> str:
    yaml_converter = _converter("yaml")
    raw = (
        yaml_converter.unstructure(value, unstructure_as=as_type)
        if as_type
        else (yaml_converter.unstructure(value))
    )
    return dump_yaml(raw)


def from_yaml(text: str, cls: Any) -> Any:
    import yaml

    return _converter("yaml").structure(yaml.safe_load(text), cls)
