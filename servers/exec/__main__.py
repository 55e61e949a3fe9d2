"""`hermitcrab-exec`: serve the exec tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from hermitcrab.servers._common.cli import build_parser
from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import serve
from hermitcrab.util.outbound import OUTBOUND_VARIABLE, allow_entries
from hermitcrab.util.private import keep_private
from hermitcrab.util.server_options import EXEC

from .changes import UndoLimits
from .network import BadNetworkOption
from .policy import DEFAULT_ALLOW, Policy
from .runner import Limits
from .sandbox import SandboxUnavailable
from .server import StateInsideRoot, build_server


def parser() -> argparse.ArgumentParser:
    owned = {
        "approval_timeout": Policy.approval_timeout_s,
        "memory_mb": Limits.memory_mb,
        "processes": Limits.processes,
        "file_size_mb": Limits.file_size_mb,
        "undo_keep": UndoLimits.keep,
        "undo_mb": UndoLimits.mb,
    }
    return build_parser(EXEC, owned, default_allow=", ".join(DEFAULT_ALLOW[:6]))


def config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `build_server` that the parsed flags stand for."""
    allow = tuple(args.allow) if args.no_default_allow else DEFAULT_ALLOW + tuple(args.allow)
    outbound = ";".join(args.allow_outbound) if args.allow_outbound else os.environ.get(OUTBOUND_VARIABLE)
    return {
        "roots": args.root,
        "state": args.state,
        "policy": Policy(security=args.security, ask=args.ask, allow=allow, approval_timeout_s=args.approval_timeout),
        "sandbox": args.sandbox,
        "network": args.network and not args.no_network,
        "limits": Limits(memory_mb=args.memory_mb, processes=args.processes, file_size_mb=args.file_size_mb),
        "allow_domains": tuple(args.allow_domain),
        "outbound_allow": allow_entries(outbound),
        "undo": UndoLimits(keep=args.undo_keep, mb=args.undo_mb),
    }


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    keep_private(args.state or default_paths("exec", os.environ)[1])
    try:
        server = build_server(**config_from_args(args))
    except NotADirectoryError as exc:
        sys.exit(f"hermitcrab-exec: --root {exc}")
    except SandboxUnavailable as exc:
        sys.exit(f"hermitcrab-exec: --sandbox bwrap: {exc}")
    except StateInsideRoot as exc:
        sys.exit(f"hermitcrab-exec: --state: {exc}")
    except BadNetworkOption as exc:
        sys.exit(f"hermitcrab-exec: --allow-domain/--allow-outbound: {exc}")
    serve(server, args)


if __name__ == "__main__":
    main()
