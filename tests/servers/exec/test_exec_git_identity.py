"""`git commit` works as the owner although commands never read the owner's ~/.gitconfig: the server passes on
their name and email and nothing else, and a repository's own identity still wins."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.sandbox import probe

pytestmark = pytest.mark.anyio
MODES = [
    "none",
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(shutil.which("bwrap") is None or probe() is not None, reason="no usable bubblewrap"),
    ),
]
COMMIT = "git init -q r 2>/dev/null; cd r && git commit -q --allow-empty -m x && git log -1 --format='%an <%ae>'"


@pytest.fixture
def owner_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = '[user]\n\tname = Ada \\"the owner\\" Lovelace\n\temail = ada@example.org\n[alias]\n\tco = !touch ran\n'
    (home / ".gitconfig").write_text(gitconfig)
    return home


async def commit(sandbox: str, workspace: Path, state: Path, home: Path) -> str:
    environ = {"PATH": os.environ["PATH"], "HOME": str(home)}
    policy = Policy(security="full", ask="off")
    server = build_server(roots=[workspace], state=state, policy=policy, sandbox=sandbox, environ=environ)  # type: ignore[arg-type]
    async with Client(server) as client:
        result = await client.call_tool("exec", {"command": COMMIT})
        alias = await client.call_tool("exec", {"command": "cd r && git co; ls"})
    assert not result.is_error and result.structured_content is not None, result.content
    assert alias.structured_content is not None and "ran" not in alias.structured_content["stdout"]
    return result.structured_content["stdout"].strip()


@pytest.mark.parametrize("sandbox", MODES)
async def test_a_commit_carries_the_owners_name_and_email_and_nothing_else_of_their_config(
    sandbox: str, workspace: Path, state: Path, owner_home: Path
) -> None:
    assert await commit(sandbox, workspace, state, owner_home) == 'Ada "the owner" Lovelace <ada@example.org>'
    assert (state / "gitconfig").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("sandbox", MODES)
async def test_a_repositorys_own_identity_wins_over_the_owners(
    sandbox: str, workspace: Path, state: Path, owner_home: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(workspace / "r")], check=True)
    subprocess.run(["git", "-C", str(workspace / "r"), "config", "user.name", "Work Me"], check=True)
    subprocess.run(["git", "-C", str(workspace / "r"), "config", "user.email", "me@work.example"], check=True)

    assert await commit(sandbox, workspace, state, owner_home) == "Work Me <me@work.example>"


async def test_without_an_owner_identity_there_is_no_file(workspace: Path, state: Path, tmp_path: Path) -> None:
    environ = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    build_server(roots=[workspace], state=state, sandbox="none", environ=environ)

    assert not (state / "gitconfig").exists()
