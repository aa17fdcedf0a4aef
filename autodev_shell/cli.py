"""The reference CLI, `autodev` (SPEC C6). Each command is a small function; user mistakes end
in one clear sentence and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from autodev_core import AutodevError

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autodev",
        description="Run a team of AI coding CLIs with failover, waits and durable run state.",
    )
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        return int(handler(args))
    except AutodevError as exc:
        print(f"autodev: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
