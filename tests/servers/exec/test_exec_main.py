"""The command line: flags become the policy, and `--help` lists them."""

from __future__ import annotations

import subprocess
import sys

from hermitcrab.servers.exec.__main__ import parser


def test_help_lists_every_flag() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hermitcrab.servers.exec", "--help"], capture_output=True, text=True, check=True
    )
    for flag in ("--root", "--security", "--allow", "--ask", "--sandbox", "--state", "--http", "--no-network"):
        assert flag in result.stdout


def test_flags_parse() -> None:
    args = parser().parse_args(
        ["--root", "/a", "--root", "/b", "--allow", "git", "--allow", "/opt/x/*", "--ask", "off", "--security", "full"]
    )
    assert [str(r) for r in args.root] == ["/a", "/b"]
    assert args.allow == ["git", "/opt/x/*"] and args.ask == "off" and args.security == "full"
    assert args.sandbox == "auto" and args.approval_timeout == 120.0
