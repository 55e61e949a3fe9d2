"""Risk tiers through the exec server: reads run, changes are asked with the plan, dangerous steps every time."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.__main__ import config_from_args, parser
from hermitcrab.servers.exec.tiers import RiskTiers
from tests.support.elicitation import User

pytestmark = pytest.mark.anyio
ALLOW = ("ls", "cat", "echo", "mkdir", "rm", "cp")


@pytest.fixture
def tiered(workspace: Path, state: Path) -> MCPServer:
    return build_server(roots=[workspace], state=state, policy=Policy(allow=ALLOW, ask="on-change"), sandbox="none")


async def run(server: MCPServer, user: User, *commands: str) -> list[bool]:
    """Each command's is_error, in one session."""
    errors: list[bool] = []
    async with Client(server, elicitation_callback=user) as client:  # type: ignore[arg-type]
        for command in commands:
            errors.append(bool((await client.call_tool("exec", {"command": command})).is_error))
    return errors


async def test_reads_and_searches_run_without_asking(tiered: MCPServer) -> None:
    user = User("deny")

    assert await run(tiered, user, "ls -la | cat", "cat a.txt > /dev/null") == [False, False]
    assert user.questions == []


async def test_a_change_is_asked_with_the_plan_and_allow_always_remembers_the_line(
    tiered: MCPServer, workspace: Path
) -> None:
    user = User("allow-always")
    command = "mkdir build && cp a.txt build/"

    assert await run(tiered, user, command, command) == [False, False]

    (question,) = user.questions  # the second run was remembered
    assert "`mkdir build` writes inside the workspace" in question.message
    assert "`cp a.txt build/` writes inside the workspace" in question.message
    assert question.requested_schema["properties"]["decision"]["enum"] == ["allow-once", "allow-always", "deny"]
    assert (workspace / "build" / "a.txt").exists()


async def test_deleting_is_asked_every_time_and_never_remembered(tiered: MCPServer, workspace: Path) -> None:
    user = User("allow-once")
    (workspace / "x").mkdir()
    (workspace / "y").mkdir()

    assert await run(tiered, user, "rm -r x", "rm -r y") == [False, False]

    assert len(user.questions) == 2
    assert "`rm -r x` deletes files (risk tier: asked every time)" in user.questions[0].message
    assert user.questions[0].requested_schema["properties"]["decision"]["enum"] == ["allow-once", "deny"]
    assert "Asked every time" in user.questions[0].message


async def test_a_denied_dangerous_step_does_not_run(tiered: MCPServer, workspace: Path) -> None:
    assert await run(tiered, User("deny"), "rm a.txt") == [True]
    assert (workspace / "a.txt").exists()


async def test_on_miss_the_allowlist_alone_decides(workspace: Path, state: Path) -> None:
    server = build_server(roots=[workspace], state=state, policy=Policy(allow=ALLOW, ask="on-miss"), sandbox="none")
    user = User("deny")

    assert await run(server, user, "mkdir build", "rm -r build") == [False, False]
    assert user.questions == []


@pytest.mark.parametrize(
    ("command", "tier"),
    [
        ("grep -r x . | sort", None),
        ("git log --oneline", None),
        ("git commit -m x", "change"),
        ("pip install requests", "change"),
        ("python3 -m pip install requests", "change"),
        ("git config user.name me", "change"),
        ("echo KEY=1 > .env", "change"),
        ("echo x > /etc/motd", "danger"),
        ("cd /etc && echo x > motd", "danger"),
        ("sudo apt-get install jq", "danger"),
        ("find . -name '*.o' -delete", "danger"),
        ("env rm x", "danger"),
        ("git push --force", "danger"),
        ("git reset --hard", "danger"),
        ("chmod u+s tool", "danger"),
        ("echo $(", "danger"),
    ],
)
def test_tiers_of_command_lines(command: str, tier: str | None, workspace: Path) -> None:
    steps = RiskTiers([workspace], "/root").steps(command, workspace)

    assert max((step.tier for step in steps), key=["change", "danger"].index, default=None) == tier


def test_risk_tiers_is_the_old_name_of_ask_on_change() -> None:
    assert config_from_args(parser().parse_args(["--risk-tiers"]))["policy"].ask == "on-change"
    assert config_from_args(parser().parse_args(["--ask", "on-change"]))["policy"].ask == "on-change"
    assert config_from_args(parser().parse_args([]))["policy"].ask == "on-leave"


async def test_status_reports_asking_on_change(tiered: MCPServer) -> None:
    async with Client(tiered) as client:
        with anyio.fail_after(5):
            status = await client.read_resource("exec://status")
    assert json.loads(status.contents[0].text)["ask"] == "on-change"  # type: ignore[union-attr]
