"""`hermitcrab-spawn`: serve the sub-agent tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import add_serve_flags, serve

from .launcher import parse_template
from .manager import Commands, Limits
from .server import build_server


def parser() -> argparse.ArgumentParser:
    _, state = default_paths("spawn", os.environ)
    limits = Limits()
    p = argparse.ArgumentParser(
        prog="hermitcrab-spawn",
        description="MCP server: sub-agents (a hermitcrab agent, or an external agent CLI) that run in the background "
        "and report back through the spawn://events resource.",
    )
    p.add_argument("--state", type=Path, metavar="DIR", help=f"where runs and their results live (default {state})")
    p.add_argument(
        "--cli",
        action="append",
        default=[],
        metavar="NAME=TEMPLATE",
        help="an external agent CLI for runtime 'cli', e.g. 'claude=claude -p {task}'; {task} (appended when absent), "
        "{model} and {label} each stay inside their one argument; no shell is involved (repeatable)",
    )
    p.add_argument(
        "--agent",
        metavar="COMMAND",
        help="the command of runtime 'agent' (default: `hermitcrab subagent` next to this server, else on PATH)",
    )
    p.add_argument(
        "--max-concurrent",
        type=positive(int),
        default=limits.max_concurrent,
        metavar="N",
        help="runs at once; more wait in a queue (default %(default)s)",
    )
    p.add_argument(
        "--max-children",
        type=positive(int),
        default=limits.max_children,
        metavar="N",
        help="active runs per session (default %(default)s)",
    )
    p.add_argument(
        "--max-depth",
        type=positive(int),
        default=limits.max_depth,
        metavar="N",
        help="1: sub-agents cannot spawn their own (default %(default)s)",
    )
    p.add_argument(
        "--timeout-s",
        type=positive(float),
        default=limits.timeout_s,
        metavar="S",
        help="default per-run timeout (default %(default)s)",
    )
    add_serve_flags(p)
    return p


def positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    """An argparse type: a number of `kind` that is at least 1."""

    def parse(text: str) -> float:
        value = kind(text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
        return value

    return parse


def commands(agent: str | None, clis: list[str]) -> Commands:
    """The agent command and the named CLI templates; ValueError names a malformed one."""
    named: dict[str, tuple[str, ...]] = {}
    for entry in clis:
        name, sep, template = entry.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--cli expects NAME=TEMPLATE, got {entry!r}")
        named[name.strip()] = parse_template(template)
    if agent is not None:
        return Commands(parse_template(agent), named)
    beside = Path(sys.executable).parent / "hermitcrab"
    found = str(beside) if beside.exists() else shutil.which("hermitcrab")
    return Commands((found, "subagent") if found else None, named)


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    _, state = default_paths("spawn", os.environ)
    try:
        configured = commands(args.agent, args.cli)
    except ValueError as exc:
        sys.exit(f"hermitcrab-spawn: {exc}")
    limits = Limits(args.max_depth, args.max_children, args.max_concurrent, args.timeout_s)
    server = build_server(args.state or state, configured, limits)
    with suppress(KeyboardInterrupt):
        serve(server, args)


if __name__ == "__main__":
    main()
