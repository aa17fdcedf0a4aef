"""The reference CLI, `autodev` (SPEC C6). Each command is a small function; user mistakes end
in one clear sentence and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from autodev_core import AutodevError
from autodev_core.errors import ConfigError

from ..store.folder import DEFAULT_RUN_DIR
from .commands import add_commands, cmd_status, restore_hint

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from types import SimpleNamespace

EXIT_USAGE = 2
#: The run store's lock was held by another process past the busy timeout (a stopped daemon):
#: a temporary failure, try again (EX_TEMPFAIL of sysexits.h).
EXIT_BUSY = 75
#: A reader that closed our output early (`| head`): as if ended by SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="autodev",
        description="Run a team of AI coding CLIs with failover, waits and durable run state.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    simulate = commands.add_parser(
        "simulate",
        help="replay a scenario in virtual time through the real scheduler",
        description="Replay SCENARIO.yaml in virtual time through the real scheduler and print "
        "its log lines, then its final status.",
    )
    simulate.add_argument("scenario", metavar="SCENARIO.yaml", help="the scenario file")
    simulate.add_argument(
        "--compare-headroom",
        metavar="AT",
        type=float,
        default=None,
        help="run the scenario with policy.headroom off and with hand_over_at AT (e.g. 0.95) "
        "and print what limits cost each run, as a Markdown table (docs/limits.md)",
    )
    simulate.set_defaults(handler=_simulate)
    demo = commands.add_parser(
        "demo",
        help="watch a bundled team of stand-in CLIs run through the real shell",
        description="Run a bundled team of stand-in CLIs (real subprocesses printing the real "
        "CLIs' notices) through the real loop, store and sleeper on a fast clock, then print "
        "what happened. Needs no account and no network.",
    )
    demo.add_argument(
        "--dir",
        default=None,
        help="keep the demo's files here (default: a new temporary directory)",
    )
    demo.set_defaults(handler=_demo)
    add_commands(commands)
    return parser


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    _summary, lines = run_demo(Path(args.dir) if args.dir else None, stream=sys.stderr)
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


def _simulate(args: argparse.Namespace) -> int:
    """`autodev simulate SCENARIO.yaml`: read the file, replay it, print the lines (SPEC D)."""
    from autodev_core.simulation import simulate
    from autodev_core.simulation.scenario import parse_scenario

    source = str(args.scenario)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot read the scenario: {reason}", source=source) from None
    scenario = parse_scenario(text, source=source)
    if args.compare_headroom is not None:
        from autodev_core.simulation.compare import compare_headroom

        try:
            comparison = compare_headroom(scenario, args.compare_headroom, source=source)
        except ValueError as exc:
            raise ConfigError(f"--compare-headroom: {exc}", source="command line") from None
        table = comparison.table(Path(source).name)
        sys.stdout.write("".join(f"{line}\n" for line in table))
        return 0
    result = simulate(scenario, source=source)
    sys.stdout.write("".join(f"{line}\n" for line in result.render()))
    return 0


def _stdout_closed() -> int:
    """The reader of our output went away (`autodev status | head -1`): nothing is wrong with
    the run, so no message. Point stdout at /dev/null so the interpreter's last flush is quiet,
    and exit as a process ended by SIGPIPE does (128 + 13)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def quick_status_args(argv: Sequence[str]) -> SimpleNamespace | None:
    """The arguments the parser makes of `status [--run DIR] [--json]`, each option spelt in
    full and given at most once, DIR not starting with `-`; None for anything else, which the
    parser reads (and refuses, abbreviates, or prints help for) as always. `autodev status` then
    builds no parser: argparse, with the gettext, locale and shutil it loads, is a fifth of a
    bare interpreter's start (docs/performance.md). tests/project/test_cold_start.py holds the two
    readings equal."""
    from types import SimpleNamespace

    if not argv or argv[0] != "status":
        return None
    run, json_flag, seen = DEFAULT_RUN_DIR, False, set()
    rest = list(argv[1:])
    while rest:
        option = rest.pop(0)
        if option in seen:
            return None
        seen.add(option)
        if option == "--json":
            json_flag = True
        elif option == "--run" and rest and not rest[0].startswith("-"):
            run = rest.pop(0)
        else:
            return None
    return SimpleNamespace(command="status", run=run, json=json_flag, handler=cmd_status)


def _open_closed_streams() -> None:
    """Give a standard stream the caller closed (`autodev run 2>&-` from a service manager,
    `autodev stop >&-` in a job, `say - 0<&-`) /dev/null instead. Python leaves such a stream
    None, and its descriptor free for the next file opened (the log, the lock): a command then
    ends in a traceback after doing its work, or the daemon dies at its start. With /dev/null
    the command behaves as with that stream redirected there: `say -` reads nothing."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
        stream = open(  # noqa: SIM115 - the process's own stream, open until it exits
            fd, "r" if fd == 0 else "w", encoding="utf-8", errors="backslashreplace",
            closefd=False)
        setattr(sys, name, stream)


def main(argv: Sequence[str] | None = None) -> int:
    _open_closed_streams()
    args: argparse.Namespace | SimpleNamespace | None = quick_status_args(
        sys.argv[1:] if argv is None else argv)
    if args is None:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "handler", None) is None:
            parser.print_help()
            return 0
    handler = args.handler
    try:
        code = int(handler(args))
        sys.stdout.flush()  # a closed pipe shows here, not as a warning at exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except AutodevError as exc:
        print(f"autodev: {exc}", file=sys.stderr)
        from ..store.run_store import StoreError

        if isinstance(exc, StoreError) and exc.kind == "busy":
            return EXIT_BUSY
        hint = restore_hint(exc) if isinstance(exc, StoreError) else ""
        if hint:
            print(f"autodev: {hint}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        # The file system refused something (a --dir that is a file, a full disk): say which
        # path and why, in one line.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"autodev: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
