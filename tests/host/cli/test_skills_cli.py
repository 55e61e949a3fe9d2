"""`hermitcrab skills`, the example skill `init` writes, and doctor's report of skills left out."""

from __future__ import annotations

import tomllib
from pathlib import Path

from typer.testing import CliRunner

from hermitcrab.host.cli.app import app

runner = CliRunner()


def test_init_writes_an_example_skill_that_is_offered(hermitcrab_home: Path):
    assert runner.invoke(app, ["init"]).exit_code == 0

    skill = hermitcrab_home / "workspace" / "skills" / "daily-brief" / "SKILL.md"
    assert skill.read_text().startswith("---\nname: daily-brief\n")
    exec_args = tomllib.loads((hermitcrab_home / "config.toml").read_text())["mcpServers"]["exec"]["args"]
    assert not {"--ask", "--risk-tiers"} & set(exec_args)  # on-leave in the sandbox, on-miss without: the server's
    listed = runner.invoke(app, ["skills"], env={"HOME": str(hermitcrab_home)})
    assert listed.exit_code == 0 and "- daily-brief: A short briefing" in listed.output


def test_skills_and_doctor_say_why_a_skill_is_left_out(hermitcrab_home: Path):
    folder = hermitcrab_home / "skills" / "gh"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        '---\nname: gh\ndescription: GitHub work.\nmetadata: {"openclaw": {"requires": {"bins": ["gh-missing-x"]}}}\n'
        "---\nUse gh.\n"
    )
    env = {"HOME": str(hermitcrab_home)}

    listed = runner.invoke(app, ["skills"], env=env)
    doctor = runner.invoke(app, ["doctor"], env={**env, "COLUMNS": "300"})

    assert "Skills: none found." in listed.output and "- gh (" in listed.output
    assert "not on PATH: gh-missing-x" in listed.output
    assert "left out: not on PATH: gh-missing-x" in doctor.output
