"""`hermitcrab-cron`: serve the cron tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import math
import os
import sys
from contextlib import suppress

from hermitcrab.servers._common.cli import build_parser
from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import serve
from hermitcrab.util.outbound import OUTBOUND_VARIABLE, Outbound, allow_entries
from hermitcrab.util.private import keep_private
from hermitcrab.util.server_options import CRON

from .server import build_server
from .store import StoreUnreadable


def parser() -> argparse.ArgumentParser:
    return build_parser(CRON)


def main(argv: list[str] | None = None) -> None:
    flags = parser()
    args = flags.parse_args(argv)
    if args.grace_s < 0:
        flags.error("--grace-s must be 0 or more seconds")
    if not 0 <= args.min_interval_s < math.inf:
        flags.error("--min-interval-s must be 0 or more seconds")
    if args.max_jobs < 1:
        flags.error("--max-jobs must be 1 or more")
    allow = allow_entries(args.allow_outbound or os.environ.get(OUTBOUND_VARIABLE))
    try:
        Outbound(allow)
    except ValueError as exc:
        flags.error(str(exc))
    _, state = default_paths("cron", os.environ)
    keep_private(args.state or state)
    try:
        server = build_server(
            args.state or state,
            grace_s=args.grace_s,
            min_interval_s=args.min_interval_s,
            max_jobs=args.max_jobs,
            outbound_allow=allow,
        )
    except StoreUnreadable as exc:
        sys.exit(f"hermitcrab-cron: {exc}")
    with suppress(KeyboardInterrupt):
        serve(server, args)


if __name__ == "__main__":
    main()
