"""The command line: flags become the policy, and `--help` lists them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermitcrab.servers.exec.__main__ import config_from_args, main, parser
from hermitcrab.servers.exec.policy import DEFAULT_ALLOW, Policy
from hermitcrab.servers.exec.runner import Limits
from tests.support.processes import help_of


def test_help_lists_every_flag() -> None:
    result = help_of("hermitcrab.servers.exec")
    for flag in ("--root", "--security", "--allow", "--ask", "--sandbox", "--state", "--http", "--network"):
        assert flag in result


def test_flags_become_the_server_config() -> None:
    args = parser().parse_args(
        ["--root", "/a", "--root", "/b", "--allow", "git", "--allow", "/opt/x/*", "--ask", "off", "--security", "full"]
    )
    config = config_from_args(args)
    assert config["roots"] == [Path("/a"), Path("/b")] and config["state"] is None
    assert config["policy"] == Policy(security="full", ask="off", allow=(*DEFAULT_ALLOW, "git", "/opt/x/*"))
    assert config["sandbox"] == "auto" and config["network"] is False and config["limits"] == Limits()
    assert config_from_args(parser().parse_args(["--network"]))["network"] is True


def test_flags_that_narrow_the_defaults() -> None:
    args = parser().parse_args(
        ["--no-default-allow", "--allow", "git", "--approval-timeout", "5", "--no-network", "--memory-mb", "0"]
    )
    config = config_from_args(args)
    assert config["policy"] == Policy(allow=("git",), approval_timeout_s=5.0)
    assert config["network"] is False and config["limits"] == Limits(memory_mb=0)
    assert config["roots"] is None


def test_a_missing_root_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    with pytest.raises(SystemExit, match="is not a directory"):
        main(["--root", str(missing), "--sandbox", "none", "--state", str(tmp_path / "state")])
    assert not missing.exists()
