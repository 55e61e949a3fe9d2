"""`hermitcrab-exec`: serve the exec tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import add_serve_flags, serve

from .policy import DEFAULT_ALLOW, Policy
from .runner import Limits
from .sandbox import SandboxUnavailable
from .server import StateInsideRoot, build_server


def parser() -> argparse.ArgumentParser:
    workspace, state = default_paths("exec", os.environ)
    p = argparse.ArgumentParser(
        prog="hermitcrab-exec",
        description="MCP server: shell commands, background processes and file tools under an allowlist policy.",
    )
    p.add_argument(
        "--root",
        action="append",
        type=Path,
        metavar="DIR",
        help=f"directory the tools may work in (repeatable; default {workspace})",
    )
    p.add_argument(
        "--security",
        choices=["deny", "allowlist", "full"],
        default="allowlist",
        help="deny: no exec; allowlist: allowed binaries run unasked; full: anything (default allowlist)",
    )
    p.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="NAME",
        help="allow a binary: a name on PATH, an absolute path or a glob (repeatable)",
    )
    shown = ", ".join(DEFAULT_ALLOW[:6])
    p.add_argument(
        "--no-default-allow",
        action="store_true",
        help=f"start from an empty allowlist instead of the read-only set ({shown}, ...)",
    )
    p.add_argument(
        "--ask",
        choices=["off", "on-miss", "always"],
        default="on-miss",
        help="when to ask the user through MCP elicitation (default on-miss)",
    )
    p.add_argument(
        "--risk-tiers",
        action="store_true",
        help="ask before changes (writes, installs, config) with the plan, and every time before deleting, writing "
        "outside the roots or escalating privileges; on top of the allowlist",
    )
    p.add_argument(
        "--approval-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="an unanswered approval counts as deny after this (default 120)",
    )
    p.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "none"],
        default="auto",
        help="auto: bubblewrap when it works here; bwrap: require it; none: never (default auto)",
    )
    p.add_argument(
        "--network",
        action="store_true",
        help="let sandboxed commands reach the network (default: no network; unsandboxed commands always can)",
    )
    p.add_argument("--no-network", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old configs
    p.add_argument(
        "--memory-mb",
        type=int,
        default=Limits.memory_mb,
        metavar="MB",
        help="address-space limit per command; 0 for none (default %(default)s)",
    )
    p.add_argument("--state", type=Path, metavar="DIR", help=f"state directory (default {state})")
    add_serve_flags(p)
    return p


def config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `build_server` that the parsed flags stand for."""
    allow = tuple(args.allow) if args.no_default_allow else DEFAULT_ALLOW + tuple(args.allow)
    return {
        "roots": args.root,
        "state": args.state,
        "policy": Policy(security=args.security, ask=args.ask, allow=allow, approval_timeout_s=args.approval_timeout),
        "sandbox": args.sandbox,
        "network": args.network and not args.no_network,
        "limits": Limits(memory_mb=args.memory_mb),
        "risk_tiers": args.risk_tiers,
    }


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        server = build_server(**config_from_args(args))
    except NotADirectoryError as exc:
        sys.exit(f"hermitcrab-exec: --root {exc}")
    except SandboxUnavailable as exc:
        sys.exit(f"hermitcrab-exec: --sandbox bwrap: {exc}")
    except StateInsideRoot as exc:
        sys.exit(f"hermitcrab-exec: --state: {exc}")
    serve(server, args)


if __name__ == "__main__":
    main()
