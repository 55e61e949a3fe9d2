"""`hermitcrab-browser`: parse the command line into a BrowserConfig and serve over stdio or HTTP."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import add_serve_flags, serve

from .config import BrowserConfig
from .origins import parse_origins
from .server import build_server

_MAX_CALL_SECONDS = 3600


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="hermitcrab-browser",
        description="MCP server driving a real Chromium through accessibility snapshots with refs.",
    )
    parser.add_argument("--headless", action="store_true", default=True, help="run without a window (default)")
    parser.add_argument(
        "--headed", "--no-headless", dest="headless", action="store_false", help="show the browser window"
    )
    profile = parser.add_mutually_exclusive_group()
    profile.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="persistent profile keeping cookies and logins (default: STATE/profile)",
    )
    profile.add_argument("--isolated", action="store_true", help="a throw-away profile: nothing is kept")
    parser.add_argument(
        "--executable",
        type=Path,
        metavar="PATH",
        help="Chromium or Chrome to run (default: Playwright's, then the system's)",
    )
    parser.add_argument(
        "--allowed-origins",
        metavar="LIST",
        help="only these origins or hosts may load, separated by ';' (e.g. 'https://a.com;*.b.org')",
    )
    parser.add_argument("--blocked-origins", metavar="LIST", help="these origins or hosts never load, ';'-separated")
    parser.add_argument(
        "--root",
        type=Path,
        action="append",
        metavar="DIR",
        help="a directory files may be uploaded from (repeatable; default: the workspace)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        metavar="DIR",
        help="directory for the profile and saved files (default: $HERMITCRAB_HOME/state/browser)",
    )
    parser.add_argument("--enable-evaluate", action="store_true", help="offer browser_evaluate (runs model-written JS)")
    parser.add_argument(
        "--snapshot-max-chars",
        type=int,
        default=40_000,
        metavar="N",
        help="cut snapshots longer than this (default: 40000)",
    )
    parser.add_argument(
        "--call-timeout",
        type=_seconds,
        default=45.0,
        metavar="SECONDS",
        help="every tool call ends within this; a page that does not answer by then is closed and replaced "
        "(default: 45, under the host's usual 60)",
    )
    add_serve_flags(parser)
    return parser.parse_args(argv)


def _seconds(value: str) -> float:
    seconds = float(value)
    if not 1 <= seconds <= _MAX_CALL_SECONDS:
        raise argparse.ArgumentTypeError(f"give between 1 and {_MAX_CALL_SECONDS} seconds, not {value}")
    return seconds


def config_from_args(args: argparse.Namespace) -> BrowserConfig:
    workspace, default_state = default_paths("browser", os.environ)
    state = (args.state or default_state).expanduser()
    profile = None if args.isolated else (args.profile or state / "profile").expanduser()
    roots = tuple(path.expanduser() for path in args.root) if args.root else (workspace,)
    return BrowserConfig(
        state_dir=state,
        profile_dir=profile,
        headless=args.headless,
        executable=args.executable,
        allowed_origins=parse_origins(args.allowed_origins),
        blocked_origins=parse_origins(args.blocked_origins),
        roots=roots,
        enable_evaluate=args.enable_evaluate,
        snapshot_max_chars=args.snapshot_max_chars,
        call_timeout_s=args.call_timeout,
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    serve(build_server(config_from_args(args)), args)


if __name__ == "__main__":
    main()
