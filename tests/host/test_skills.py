"""Skills: discovery by precedence, requirements, the prompt budget, and the read-only `skill` tool."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from hermitcrab.host.config import Settings, SkillSettings, load_settings
from hermitcrab.host.errors import ConfigError
from hermitcrab.host.skills.catalog import SkillShelf, discover, prompt_section, read_skill, report
from hermitcrab.host.skills.tool import read


def write_skill(
    directory: Path, name: str, description: str = "Does a thing.", extra: str = "", body: str = ""
) -> Path:
    folder = directory / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body or name}\n")
    return folder


def settings_with_skills(tmp_path: Path) -> Settings:
    skills = SkillSettings(user_dir=tmp_path / "user", extra_dirs=(tmp_path / "extra",), environ={"PATH": ""})
    return Settings(home=tmp_path / "home", providers=(), servers=(), skills=skills)


def test_the_first_directory_by_precedence_wins_and_the_others_are_reported_as_shadowed(tmp_path: Path):
    settings = settings_with_skills(tmp_path)
    dirs = settings.skill_dirs
    assert dirs == [
        tmp_path / "home/workspace/skills",
        tmp_path / "home/workspace/.agents/skills",
        tmp_path / "user",
        tmp_path / "home/skills",
        tmp_path / "extra",
    ]
    for rank, directory in enumerate(reversed(dirs)):
        write_skill(directory, "deploy", body=f"rank {rank}")
    write_skill(dirs[3], "backup")

    catalog = discover(dirs, {}, set())

    assert [s.name for s in catalog.skills] == ["deploy", "backup"]
    deploy = catalog.get("deploy")
    assert deploy is not None and deploy.folder == dirs[0] / "deploy" and deploy.body == "rank 4"
    shadowed = [item for item in catalog.left_out if item.name == "deploy"]
    assert len(shadowed) == 4 and all(item.reason == f"shadowed by {deploy.file}" for item in shadowed)


def test_unmet_requirements_leave_a_skill_out_with_the_reason(tmp_path: Path):
    write_skill(tmp_path, "mine", extra="requires:\n  bins: [no-such-binary-x]\n  tools: [memory_search]\n")
    write_skill(
        tmp_path,
        "openclaw",
        extra='metadata: {"openclaw": {"requires": {"env": ["GH_TOKEN"], "anyBins": ["nope-a", "nope-b"]}}}\n',
    )
    write_skill(tmp_path, "always", extra='metadata: {"openclaw": {"always": true, "requires": {"env": ["X"]}}}\n')
    write_skill(tmp_path, "fine", extra="requires:\n  bins: [sh]\n  env: [HOME]\n  tools: [echo]\n")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("no frontmatter here\n")

    catalog = discover([tmp_path], {"PATH": os.environ["PATH"], "HOME": "/home/me"}, {"echo"})

    assert [s.name for s in catalog.skills] == ["always", "fine"]
    reasons = {item.name: item.reason for item in catalog.left_out}
    assert reasons["mine"] == "not on PATH: no-such-binary-x; no MCP server offers the tool memory_search"
    assert reasons["openclaw"] == "none of these on PATH: nope-a, nope-b; environment variable not set: GH_TOKEN"
    assert reasons["broken"].startswith("no YAML frontmatter")
    shown = report(catalog)
    assert "Left out (3):" in shown and "not on PATH: no-such-binary-x" in shown


def test_frontmatter_fields_of_other_hosts_are_read(tmp_path: Path):
    folder = write_skill(
        tmp_path,
        "review",
        description="Review code.\n  Use for PRs.",
        extra='context: fork\nuser-invocable: true\ndisable-model-invocation: true\nargument-hint: "[path]"\n',
    )

    skill = read_skill(folder / "SKILL.md")

    assert skill.fork and not skill.model_invocable and skill.argument_hint == "[path]"
    assert skill.description == "Review code. Use for PRs."


def test_the_prompt_lists_skills_within_the_budget_and_names_the_rest(tmp_path: Path):
    for index in range(40):
        write_skill(tmp_path, f"skill-{index:02d}", description="x" * 100)
    write_skill(tmp_path, "hidden", extra="disable-model-invocation: true\n")
    catalog = discover([tmp_path], {}, set())

    section = prompt_section(catalog, 3_000)

    described = [line for line in section.splitlines() if line.startswith("- skill-")]
    assert 10 < len(described) < 40 and sum(len(line) + 1 for line in described) <= 3_000
    assert f"({tmp_path / 'skill-00' / 'SKILL.md'})" in described[0]
    assert "read them with `skill`): " in section and "skill-39" in section.splitlines()[-2]
    assert "hidden" not in section
    assert prompt_section(discover([], {}, set()), 3_000) == ""


def test_the_skill_tool_reads_only_inside_the_skills_folder(tmp_path: Path):
    folder = write_skill(tmp_path / "skills", "deploy", body="Run scripts/go.sh, see notes.md.")
    (folder / "notes.md").write_text("the notes")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "go.sh").write_text("echo go")
    (tmp_path / "secret.txt").write_text("secret")
    (folder / "link.md").symlink_to(tmp_path / "secret.txt")
    catalog = discover([tmp_path / "skills"], {}, set())

    whole = read(catalog, {"name": "deploy"})
    assert not whole.is_error and "Run scripts/go.sh" in whole.text and "notes.md, scripts/go.sh" in whole.text
    assert read(catalog, {"name": "deploy", "file": "scripts/go.sh"}).text == "echo go"
    for outside in ("../../secret.txt", str(tmp_path / "secret.txt"), "link.md"):
        refused = read(catalog, {"name": "deploy", "file": outside})
        assert refused.is_error and "outside the folder of skill deploy" in refused.text
    assert read(catalog, {"name": "nope"}).is_error
    assert read(catalog, {"name": "deploy", "file": "missing.md"}).is_error


def test_config_adds_directories_after_the_users_own(hermitcrab_home: Path, tmp_path: Path):
    (hermitcrab_home / "config.toml").write_text(
        '[skills]\nextra_dirs = ["shared", "/opt/skills"]\nprompt_chars = 500\n'
    )

    settings = load_settings({"HERMITCRAB_HOME": str(hermitcrab_home), "HOME": str(tmp_path / "me")})

    assert settings.skill_dirs[2:] == [
        tmp_path / "me/.agents/skills",
        hermitcrab_home / "skills",
        hermitcrab_home / "shared",
        Path("/opt/skills"),
    ]
    assert settings.skills.prompt_chars == 500


def test_a_mistyped_skills_key_names_the_nearest(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text('[skills]\nextra_dir = ["x"]\n')

    with pytest.raises(ConfigError, match=re.escape("skills.extra_dir: unknown key (did you mean 'extra_dirs'?)")):
        load_settings({"HERMITCRAB_HOME": str(hermitcrab_home)})


def test_a_shelf_parses_skills_again_only_when_a_stat_pass_finds_a_change(tmp_path: Path):
    skills = tmp_path / "skills"
    write_skill(skills, "deploy", description="Ships it.")
    shelf = SkillShelf()
    assert [s.description for s in discover([skills], {}, set(), shelf).skills] == ["Ships it."]

    file = skills / "deploy" / "SKILL.md"
    seen = file.stat()
    file.write_text(file.read_text().replace("Ships it.", "Sinks it."))  # same size, then the same time
    os.utime(file, ns=(seen.st_atime_ns, seen.st_mtime_ns))
    assert [s.description for s in discover([skills], {}, set(), shelf).skills] == ["Ships it."]  # not read again

    write_skill(skills, "deploy", description="Ships it, then tells.")
    assert [s.description for s in discover([skills], {}, set(), shelf).skills] == ["Ships it, then tells."]
    write_skill(skills, "backup")
    assert [s.name for s in discover([skills], {}, set(), shelf).skills] == ["backup", "deploy"]
    (skills / "backup" / "SKILL.md").unlink()
    assert [s.name for s in discover([skills], {}, set(), shelf).skills] == ["deploy"]
    assert discover([skills], {}, set(), shelf) == discover([skills], {}, set())
