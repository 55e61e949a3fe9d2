"""`hermitcrab-browser`: parse the command line into a BrowserConfig and serve over stdio or HTTP."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from hermitcrab.servers._common.cli import build_parser
from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import serve
from hermitcrab.util.outbound import OUTBOUND_VARIABLE, Outbound, allow_entries
from hermitcrab.util.private import keep_private
from hermitcrab.util.server_options import BROWSER

from .config import UPLOADS, BrowserConfig
from .origins import parse_origins
from .server import build_server


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    owned = {"snapshot_max_chars": BrowserConfig.snapshot_max_chars, "call_timeout": BrowserConfig.call_timeout_s}
    return build_parser(BROWSER, owned).parse_args(argv)


def config_from_args(args: argparse.Namespace) -> BrowserConfig:
    workspace, default_state = default_paths("browser", os.environ)
    state = (args.state or default_state).expanduser()
    profile = None if args.isolated else (args.profile or state / "profile").expanduser()
    roots = tuple(path.expanduser() for path in args.root) if args.root else (workspace / UPLOADS,)
    given = ";".join(args.allow_outbound) if args.allow_outbound else os.environ.get(OUTBOUND_VARIABLE)
    return BrowserConfig(
        state_dir=state,
        profile_dir=profile,
        headless=args.headless,
        executable=args.executable,
        allowed_origins=parse_origins(args.allowed_origins),
        blocked_origins=parse_origins(args.blocked_origins),
        outbound_allow=allow_entries(given),
        roots=roots,
        enable_evaluate=args.enable_evaluate,
        snapshot_max_chars=args.snapshot_max_chars,
        call_timeout_s=args.call_timeout,
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    config = config_from_args(args)
    try:
        Outbound(config.outbound_allow)
    except ValueError as exc:
        sys.exit(f"hermitcrab-browser: {exc}")
    keep_private(config.state_dir)
    serve(build_server(config), args)


if __name__ == "__main__":
    main()
