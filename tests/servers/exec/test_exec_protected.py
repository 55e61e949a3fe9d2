"""What must not change, even inside the sandbox's writable roots: persona and memory files, git's config and hooks.

Every attack runs through the real server in real bwrap (`--security full`, so the policy lets it run and only the
sandbox stands in the way), and the files are compared byte for byte afterwards (those tests skip without bwrap).
The file tools, and the policy without the sandbox, refuse the same writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.environment import child_environment
from hermitcrab.servers.exec.protected import Protected
from hermitcrab.servers.exec.runner import Job, Limits, Spec
from hermitcrab.servers.exec.sandbox import detect, probe
from tests.support.elicitation import User

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None or probe() is not None, reason="bubblewrap is not usable here"
)

ATTACKS = {
    "persona": [
        "echo x > SOUL.md",
        "echo x >> AGENTS.md",
        "rm -f AGENTS.md",
        "mv SOUL.md soul.bak",
        "echo x > BOOTSTRAP.md",  # missing: a stand-in keeps it from being created
        "echo x > memory/new.md",
        "rm -rf memory",
        "mv memory m2",
    ],
    "hooks": [  # an enabled hook's command runs on the host, outside the sandbox
        "echo 'touch ~/pwned' >> hooks/log/run.sh",
        "mkdir hooks/evil",
        "mv hooks h2 && mkdir -p hooks/log",
        "echo 'run this' > BOOT.md",  # missing: run as the owner's instructions at start-up once created
    ],
    "git": [
        "echo '[alias] st = !touch pwned' >> proj/.git/config",
        "git config --file proj/.git/config alias.st '!touch pwned'",
        "cd proj && git config alias.st '!touch pwned'",
        "mkdir -p proj/.git/hooks && echo 'touch pwned' > proj/.git/hooks/pre-commit",  # the repo had no hooks
        "echo /var/tmp > proj/.git/commondir",
        "echo '[alias] st = !touch pwned' > proj/.git/config.worktree",  # read: proj enables worktreeConfig
        "mv proj/.git proj/g2 && mkdir proj/.git",
        "mv proj p2 && mkdir proj",
        "mv nested n2",
        "echo '[alias] x = !touch pwned' >> bare.git/config",
        "mkdir bare.git/hooks/x",
    ],
}


@pytest.fixture
def tree(workspace: Path) -> dict[Path, bytes | None]:
    """A hermitcrab workspace (persona files, memory/) holding repositories; every file's bytes before."""
    (workspace / "SOUL.md").write_text("be kind\n")
    (workspace / "AGENTS.md").write_text("rules\n")
    (workspace / "memory").mkdir()
    (workspace / "memory" / "2026-12-01.md").write_text("a note\n")
    (workspace / "hooks" / "log").mkdir(parents=True)
    (workspace / "hooks" / "log" / "run.sh").write_text("#!/bin/sh\ncat >> log.jsonl\n")
    for repo in (workspace / "proj", workspace / "nested" / "deeper" / "repo"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        shutil.rmtree(repo / ".git" / "hooks")  # a missing hooks folder must not be creatable either
    subprocess.run(["git", "init", "-q", "--bare", str(workspace / "bare.git")], check=True)
    subprocess.run(["git", "-C", str(workspace / "proj"), "config", "extensions.worktreeConfig", "true"], check=True)
    return _snapshot(workspace)


def _snapshot(workspace: Path) -> dict[Path, bytes | None]:
    """Every file's bytes and every folder (None), git's objects aside."""
    paths = [p for p in sorted(workspace.rglob("*")) if "objects" not in p.parts]
    return {p: p.read_bytes() if p.is_file() else None for p in paths}


async def run(server: MCPServer, command: str) -> dict[str, Any]:
    async with Client(server) as client:
        result = await client.call_tool("exec", {"command": command})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


@needs_bwrap
@pytest.mark.parametrize("attack", [a for family in ATTACKS.values() for a in family])
async def test_a_protected_file_cannot_change_through_exec(
    server_factory: Callable[..., MCPServer], workspace: Path, tree: dict[Path, bytes | None], attack: str
) -> None:
    server = server_factory(sandbox="bwrap", security="full")
    out = await run(server, attack)
    assert out["exit_code"] != 0, out
    assert _snapshot(workspace) == tree  # stand-ins (proj/.git/hooks, BOOTSTRAP.md, commondir) gone again too


@needs_bwrap
@pytest.mark.parametrize("attack", [a for family in ATTACKS.values() for a in family])
async def test_without_the_binds_each_attack_changes_the_tree(
    workspace: Path, tree: dict[Path, bytes | None], attack: str
) -> None:
    sandbox, _ = detect("bwrap")
    assert sandbox is not None
    env = child_environment(dict(os.environ), None)
    job = Job(Spec(attack, workspace, env, 10, Limits(), sandbox, [workspace]))
    assert await job.wait(10)
    assert _snapshot(workspace) != tree


@needs_bwrap
async def test_ordinary_work_still_runs_in_a_protected_tree(
    server_factory: Callable[..., MCPServer], workspace: Path, tree: dict[Path, bytes | None]
) -> None:
    server = server_factory(sandbox="bwrap", security="full")
    command = (
        "cd proj && echo hi > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm first"
        " && git log --format=%s && cd .. && mkdir -p build && cp SOUL.md build/ && rm -r build && cat memory/*.md"
    )
    out = await run(server, command)
    assert (out["exit_code"], out["stdout"]) == (0, "first\na note\n"), out
    assert _snapshot(workspace) == {**tree, **_snapshot(workspace / "proj")}  # only proj gained files


@needs_bwrap
async def test_a_stand_in_outlives_the_command_that_made_it_while_another_uses_it(
    server_factory: Callable[..., MCPServer], workspace: Path, tree: dict[Path, bytes | None]
) -> None:
    # Removing a mount point on the host drops that mount in every other namespace: the second command would
    # then be free to create BOOTSTRAP.md. The stand-in must stay until the last command binding it has ended.
    server = server_factory(sandbox="bwrap", security="full")
    async with Client(server) as client:
        first = await client.call_tool("exec", {"command": "cat", "background": True})
        second = await client.call_tool("exec", {"command": "read x; echo evil > BOOTSTRAP.md", "background": True})
        ids = [r.structured_content["session_id"] for r in (first, second) if r.structured_content]
        await client.call_tool("process", {"action": "kill", "session_id": ids[0]})
        await client.call_tool("process", {"action": "write", "session_id": ids[1], "data": "go\n"})
        result = await client.call_tool("process", {"action": "poll", "session_id": ids[1], "wait_ms": 10_000})
    assert result.structured_content is not None
    assert result.structured_content["result"]["exit_code"] != 0
    assert not (workspace / "BOOTSTRAP.md").exists()


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"path": "SOUL.md", "content": "evil"}),
        ("write_file", {"path": "BOOTSTRAP.md", "content": "evil"}),
        ("edit_file", {"path": "AGENTS.md", "old_text": "rules", "new_text": "evil"}),
        ("write_file", {"path": "memory/2026-12-02.md", "content": "evil"}),
        ("write_file", {"path": "hooks/log/run.sh", "content": "evil"}),
        ("write_file", {"path": "hooks/new/HOOK.md", "content": "evil"}),
        ("write_file", {"path": "proj/.git/hooks/pre-commit", "content": "evil"}),
        ("write_file", {"path": "bare.git/config", "content": "evil"}),
    ],
)
async def test_the_file_tools_refuse_to_write_a_protected_file_and_still_read_it(
    server_factory: Callable[..., MCPServer],
    workspace: Path,
    tree: dict[Path, bytes | None],
    tool: str,
    args: dict[str, str],
) -> None:
    async with Client(server_factory()) as client:
        result = await client.call_tool(tool, args)
        read = await client.call_tool("read_file", {"path": "SOUL.md"})
    assert result.is_error and "Refused" in str(result.content), result.content
    assert "be kind" in str(read.content)
    assert _snapshot(workspace) == tree


@pytest.mark.parametrize("decision", ["allow-once", "deny"])
async def test_a_file_tool_changes_a_persona_file_only_when_the_owner_approves_the_change_shown(
    server_factory: Callable[..., MCPServer], workspace: Path, tree: dict[Path, bytes | None], decision: str
) -> None:
    owner = User(decision)
    async with Client(server_factory(), elicitation_callback=owner) as client:
        write = await client.call_tool("write_file", {"path": "SOUL.md", "content": "be brief\n"})
        edit = await client.call_tool("edit_file", {"path": "AGENTS.md", "old_text": "rules", "new_text": "laws"})
        made = await client.call_tool("write_file", {"path": "IDENTITY.md", "content": "Name: Crab\n"})
        memory = await client.call_tool("write_file", {"path": "memory/2026-12-02.md", "content": "a note"})
        plain = await client.call_tool("write_file", {"path": "notes.txt", "content": "x"})

    shown = [question.message for question in owner.questions]
    assert len(shown) == 3 and "SOUL.md" in shown[0] and "be brief" in shown[0]
    assert "rules" in shown[1] and "laws" in shown[1] and "IDENTITY.md" in shown[2]
    assert memory.is_error and "memory_append" in str(memory.content)  # the memory folder is never asked about
    assert not plain.is_error  # an ordinary file is not asked about
    if decision == "allow-once":
        assert not (write.is_error or edit.is_error or made.is_error), (write.content, edit.content, made.content)
        assert (workspace / "SOUL.md").read_text() == "be brief\n" and (workspace / "AGENTS.md").read_text() == "laws\n"
        assert (workspace / "IDENTITY.md").read_text() == "Name: Crab\n"
    else:
        assert write.is_error and edit.is_error and made.is_error and "denied" in str(write.content)
        assert {p: v for p, v in _snapshot(workspace).items() if p.name != "notes.txt"} == tree


@pytest.mark.parametrize(
    "command",
    [
        "echo x > SOUL.md",
        "echo x | tee memory/2026-12-02.md",
        "echo x > BOOTSTRAP.md",
        "rm AGENTS.md",
        "echo x > hooks/log/run.sh",
    ],
)
async def test_without_the_sandbox_the_policy_refuses_the_same_writes(
    workspace: Path, state: Path, tree: dict[Path, bytes | None], command: str
) -> None:
    policy = Policy(ask="off", allow=("echo", "tee", "rm"))
    server = build_server(roots=[workspace], state=state, policy=policy, sandbox="none")
    async with Client(server) as client:
        result = await client.call_tool("exec", {"command": command})
        control = await client.call_tool("exec", {"command": "echo x > notes.txt"})
    assert result.is_error and any(
        why in str(result.content) for why in ("persona file", "memory folder", "hooks folder")
    )
    assert not control.is_error and (workspace / "notes.txt").read_text() == "x\n"
    assert {p: v for p, v in _snapshot(workspace).items() if p.name != "notes.txt"} == tree


def test_the_walk_finds_repositories_and_notices_new_ones(workspace: Path, tree: dict[Path, bytes | None]) -> None:
    guard = Protected([workspace])
    configs = {p.path for p in guard.current() if p.path.name == "config"}
    assert configs == {
        workspace / "proj" / ".git" / "config",
        workspace / "nested" / "deeper" / "repo" / ".git" / "config",
        workspace / "bare.git" / "config",
    }
    subprocess.run(["git", "init", "-q", str(workspace / "nested" / "new")], check=True)
    assert workspace / "nested" / "new" / ".git" / "config" in {p.path for p in guard.current()}
    pins = {p.path for p in guard.current() if p.kind == "pin"}
    assert {workspace / "nested", workspace / "nested" / "deeper", workspace / "proj" / ".git"} <= pins
