"""A server's argparse parser, built from its declared options (`hermitcrab.util.server_options`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from hermitcrab.util.server_options import ServerOptions

from .paths import default_paths
from .serve import add_serve_flags


def build_parser(
    server: ServerOptions, defaults: Mapping[str, Any] | None = None, **fields: str
) -> argparse.ArgumentParser:
    """The parser of `server`'s options, then `--http` and `--log-level`.

    `defaults` are the defaults the server's own code holds, by option key; `fields` fill the `{name}`s its help
    names besides `{workspace}` and `{state}` (this server's default folders).
    """
    workspace, state = default_paths(server.name, os.environ)
    fill = {"workspace": str(workspace), "state": str(state), **fields}
    owned = defaults or {}
    parser = argparse.ArgumentParser(prog=server.prog, description=server.description)
    exclusive = dict.fromkeys(option.exclusive for option in server.options if option.exclusive)
    groups = {name: parser.add_mutually_exclusive_group() for name in exclusive}
    for option in server.options:
        target = parser if option.exclusive is None else groups[option.exclusive]
        text = option.help
        for name, value in fill.items():
            text = text.replace(f"{{{name}}}", value)
        given: dict[str, Any] = {
            "help": text,
            "default": owned.get(option.key, option.default),
            "type": option.type,
            "action": option.action,
            "const": option.const,
            "metavar": option.metavar,
            "choices": option.choices,
            "dest": option.dest,
            "nargs": option.nargs,
        }
        target.add_argument(*option.flags, **{key: value for key, value in given.items() if value is not None})
    add_serve_flags(parser)
    return parser
