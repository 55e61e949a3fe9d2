"""`doctor` warns when config.toml (it holds tokens) or the home (conversations, memories) is open to other users."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from tests.support.cli_output import flowing

runner = CliRunner()


def doctor(home: Path) -> str:
    """doctor's table, with no MCP server to start."""
    desktop = home.parent / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {}}))
    return flowing(runner.invoke(app, ["doctor", "--mcp-config", str(desktop)], env={"COLUMNS": "400"}).output)


def test_doctor_warns_when_the_config_or_the_home_is_readable_by_others(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text("")
    (hermitcrab_home / "config.toml").chmod(0o644)
    hermitcrab_home.chmod(0o755)

    output = doctor(hermitcrab_home)

    assert f"{hermitcrab_home / 'config.toml'} is open to other users (mode 0644)" in output
    assert f"{hermitcrab_home} is open to other users (mode 0755)" in output
    assert f"chmod 600 {hermitcrab_home / 'config.toml'}" in output and f"chmod 700 {hermitcrab_home}" in output


def test_doctor_is_content_when_only_the_owner_may_read_them(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text("")
    (hermitcrab_home / "config.toml").chmod(0o600)
    hermitcrab_home.chmod(0o700)

    output = doctor(hermitcrab_home)

    assert "open to other users" not in output
    assert "config.toml and the home are the owner's alone" in output
