"""`hermitcrab-cron`: serve the cron tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import math
import os
import sys
from contextlib import suppress
from pathlib import Path

from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import add_serve_flags, serve

from .limits import DEFAULT_MAX_JOBS, DEFAULT_MIN_INTERVAL_S
from .server import DEFAULT_GRACE_S, build_server
from .store import StoreUnreadable


def parser() -> argparse.ArgumentParser:
    _, state = default_paths("cron", os.environ)
    p = argparse.ArgumentParser(
        prog="hermitcrab-cron",
        description="MCP server: scheduled jobs (at, every, cron with time zones) whose firings wait on the "
        "cron://events resource until acknowledged.",
    )
    p.add_argument(
        "--state", type=Path, metavar="DIR", help=f"where the job store and run history live (default {state})"
    )
    p.add_argument(
        "--grace-s",
        type=float,
        default=DEFAULT_GRACE_S,
        metavar="N",
        help="after downtime, an overdue job runs once if its run is at most N seconds late, else it is recorded "
        "as missed (default %(default)s: 12 hours)",
    )
    p.add_argument(
        "--min-interval-s",
        type=float,
        default=DEFAULT_MIN_INTERVAL_S,
        metavar="N",
        help="a job added or rescheduled over MCP must not run more often than every N seconds; 0 allows any "
        "schedule (default %(default)g: 5 minutes)",
    )
    p.add_argument(
        "--max-jobs",
        type=int,
        default=DEFAULT_MAX_JOBS,
        metavar="N",
        help="cron_add is refused once the store holds N jobs (default %(default)s)",
    )
    add_serve_flags(p)
    return p


def main(argv: list[str] | None = None) -> None:
    flags = parser()
    args = flags.parse_args(argv)
    if args.grace_s < 0:
        flags.error("--grace-s must be 0 or more seconds")
    if not 0 <= args.min_interval_s < math.inf:
        flags.error("--min-interval-s must be 0 or more seconds")
    if args.max_jobs < 1:
        flags.error("--max-jobs must be 1 or more")
    _, state = default_paths("cron", os.environ)
    try:
        server = build_server(
            args.state or state, grace_s=args.grace_s, min_interval_s=args.min_interval_s, max_jobs=args.max_jobs
        )
    except StoreUnreadable as exc:
        sys.exit(f"hermitcrab-cron: {exc}")
    with suppress(KeyboardInterrupt):
        serve(server, args)


if __name__ == "__main__":
    main()
