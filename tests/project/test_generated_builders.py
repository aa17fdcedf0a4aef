"""Issue 27 item 3: the builders of autodev_core/scheduler/_build.py are generated from the
classes' fields (tests/helpers/gen_builders.py), as attrs generates `__init__`, and kept in the
repository: the file must be what the generator makes from the classes now, so a field added to
a class (or a default changed) cannot leave its builder behind."""

from __future__ import annotations

import inspect
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import attrs
import pytest
from helpers import gen_builders
from helpers.gen_builders import BUILDERS, TARGET, Builder, GenerationError, builder_source

import autodev_core.scheduler._build as build
from autodev_core._twins import twin_of


def test_the_checked_in_builders_are_what_the_generator_makes_from_the_classes_now() -> None:
    current = TARGET.read_text(encoding="utf-8")
    assert current == gen_builders.expected(current), (
        f"{TARGET.name} is stale: run `python {gen_builders.COMMAND} --write` "
        f"(or `python {gen_builders.COMMAND}` to see the diff)"
    )


def test_each_builder_takes_its_class_init_parameters_with_attrs_defaults() -> None:
    """Read back from the imported module, not the text: the signature attrs gave `__init__`."""
    for row in BUILDERS:
        made = inspect.signature(getattr(build, row.name))
        init = inspect.signature(row.cls.__init__)
        wanted = [(p.name, p.default) for p in init.parameters.values() if p.name != "self"]
        assert [(p.name, p.default) for p in made.parameters.values()] == wanted, row.name


def test_the_generator_run_without_write_is_silent_on_the_fresh_file() -> None:
    """The command as a developer runs it."""
    run = subprocess.run([sys.executable, str(gen_builders.ROOT / gen_builders.COMMAND)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert (run.returncode, run.stdout) == (0, ""), run.stderr


def test_a_stale_copy_gets_a_diff_and_exit_1_and_write_makes_it_fresh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh = TARGET.read_text(encoding="utf-8")
    stale = fresh.replace("    self.attempts = attempts\n", "", 1)  # Outage's builder forgets one
    assert stale != fresh
    copy = tmp_path / "_build.py"
    copy.write_text(stale, encoding="utf-8")
    assert gen_builders.main([], copy) == 1
    out, err = capsys.readouterr()
    assert "+    self.attempts = attempts\n" in out
    assert f"is stale: run `python {gen_builders.COMMAND} --write`" in err
    assert copy.read_text(encoding="utf-8") == stale  # told, not rewritten
    assert gen_builders.main(["--write"], copy) == 0
    assert copy.read_text(encoding="utf-8") == fresh
    assert gen_builders.main([], copy) == 0
    copy.write_text(fresh.replace(gen_builders.END, "# the end"), encoding="utf-8")
    assert gen_builders.main(["--write"], copy) == 2  # no markers: nothing rewritten
    assert "lacks the markers" in capsys.readouterr().err


@attrs.frozen(weakref_slot=False)
class _Planted:
    at: datetime
    count: int = 2
    note: str = "x"
    derived: int = attrs.field(init=False)
    _scratch: list[int] | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "derived", self.count * 2)


def test_a_builder_is_written_from_the_fields_and_a_field_without_a_value_is_refused() -> None:
    source = builder_source(Builder(
        _Planted, "new_planted", derived=(("derived", "count * 2"),)))
    assert "def new_planted(at: datetime, count: int = 2, note: str = \"x\") -> _Planted:" in source
    assert "    self.derived = count * 2\n    self._scratch = None\n" in source
    # cattrs resolves a class's annotations into types (`attrs.resolve_types`, which rewrites
    # `field.type`): the builder is still written with the annotations as written
    attrs.resolve_types(_Planted)
    assert attrs.fields(_Planted).at.type is datetime
    assert builder_source(Builder(
        _Planted, "new_planted", derived=(("derived", "count * 2"),))) == source
    # the text runs (tests may exec) and builds the checked value
    space: dict[str, object] = {"_Planted": _Planted, "_new": object.__new__, "twin_of": twin_of}
    exec("from __future__ import annotations\n" + source, space)
    made = space["new_planted"](datetime(2026, 1, 1), 3)  # type: ignore[operator]
    assert made == _Planted(datetime(2026, 1, 1), 3) and made.derived == 6
    with pytest.raises(GenerationError, match=r"_Planted.derived has init=False and no default"):
        builder_source(Builder(_Planted, "new_planted"))
    with pytest.raises(GenerationError, match=r"_Planted has no fields \['other'\]"):
        builder_source(Builder(_Planted, "new_planted",
                               derived=(("derived", "1"), ("other", "2"))))

