"""`hermitcrab-spawn`: serve the sub-agent tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from contextlib import suppress
from pathlib import Path

from hermitcrab.servers._common.cli import build_parser
from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import serve
from hermitcrab.util.private import keep_private
from hermitcrab.util.server_options import SPAWN

from .launcher import parse_template
from .manager import Commands, Limits
from .server import build_server


def parser() -> argparse.ArgumentParser:
    limits = Limits()
    owned = {
        "max_concurrent": limits.max_concurrent,
        "max_children": limits.max_children,
        "max_depth": limits.max_depth,
        "timeout_s": limits.timeout_s,
    }
    return build_parser(SPAWN, owned)


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
    keep_private(args.state or state)
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
