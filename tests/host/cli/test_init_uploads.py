"""`hermitcrab init` gives the browser an upload folder of its own, never the whole workspace."""

from __future__ import annotations

import tomllib
from pathlib import Path

from typer.testing import CliRunner

from hermitcrab.host.cli.app import app


def test_the_init_default_upload_root_is_workspace_uploads(hermitcrab_home: Path):
    result = CliRunner().invoke(app, ["init"])

    assert result.exit_code == 0, result.output
    workspace = hermitcrab_home / "workspace"
    args = tomllib.loads((hermitcrab_home / "config.toml").read_text())["mcpServers"]["browser"]["args"]
    roots = [args[index + 1] for index, arg in enumerate(args) if arg == "--root"]
    assert roots == [str(workspace / "uploads")], "never the workspace with MEMORY.md and the persona"
    assert (workspace / "uploads").is_dir() and (workspace / "uploads").stat().st_mode & 0o777 == 0o700
    assert (workspace / "MEMORY.md").is_file() and not (workspace / "uploads" / "MEMORY.md").exists()
