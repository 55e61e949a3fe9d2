"""What is asked, by mode: on-leave in the sandbox (only leaving it), on-change and on-miss (the parser), and the
fail-closed parser without a sandbox. Real server over MCP, real bwrap, real files."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec import build_server
from hermitcrab.servers.exec.leaving import LeaveMiss, Leaves
from hermitcrab.servers.exec.policy import Verdict
from hermitcrab.servers.exec.sandbox import probe
from hermitcrab.util.server_options import NO_SANDBOX
from tests.support.elicitation import User

pytestmark = pytest.mark.anyio
bwrap = pytest.mark.skipif(shutil.which("bwrap") is None or probe() is not None, reason="bubblewrap is not usable")


async def call(server: MCPServer, user: User, command: str, era: str = "auto") -> tuple[bool, str]:
    async with Client(server, elicitation_callback=user, mode=era) as client:  # type: ignore[arg-type]
        result = await client.call_tool("exec", {"command": command})
    return result.is_error, result.content[0].text  # type: ignore[union-attr]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


@bwrap
async def test_in_the_sandbox_a_program_off_the_allowlist_writes_the_root_unasked(
    server_factory: Callable[..., MCPServer], workspace: Path
) -> None:
    user = User("deny")
    command = "touch made.txt && python3 -c \"open('py.txt', 'w').write('x')\" && awk 'BEGIN { print 1 }'"
    is_error, text = await call(server_factory(sandbox="bwrap"), user, command)

    assert not is_error, text
    assert (workspace / "made.txt").exists() and (workspace / "py.txt").read_text() == "x"
    assert user.questions == []


@bwrap
async def test_in_the_default_layout_the_workspace_inside_the_hidden_home_is_written_unasked(tmp_path: Path) -> None:
    environ = {"HERMITCRAB_HOME": str(tmp_path / "hc"), "HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"]}
    (tmp_path / "home").mkdir()
    user = User("deny")
    is_error, text = await call(build_server(sandbox="bwrap", environ=environ), user, "touch made.txt")

    assert not is_error, text
    assert (tmp_path / "hc" / "workspace" / "made.txt").exists() and user.questions == []


@bwrap
@pytest.mark.parametrize("era", ["auto", "legacy"])  # an input-required round, and the older mid-call request
async def test_writing_outside_is_asked_and_the_approval_opens_only_that_folder(
    server_factory: Callable[..., MCPServer], workspace: Path, outside: Path, tmp_path: Path, era: str
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    user = User("allow-once")
    # python's write is one the parser does not see: the sandbox must refuse it, the approval covers only cp's
    command = f"cp a.txt {outside}/copy.txt; python3 -c \"open('{other}/sneaked.txt', 'w')\" || echo kept out"
    is_error, text = await call(server_factory(sandbox="bwrap"), user, command, era)

    assert not is_error, text
    assert (outside / "copy.txt").read_text() == "hello\nworld\n"
    assert not (other / "sneaked.txt").exists() and "kept out" in text
    (question,) = user.questions
    assert f"approving makes {outside} writable for this call" in question.message
    assert question.requested_schema["properties"]["decision"]["enum"] == ["allow-once", "deny"]


@bwrap
@pytest.mark.parametrize("ask", ["on-change", "on-miss", "always"])
async def test_in_the_sandbox_an_approval_in_a_parser_mode_opens_what_the_line_writes_outside(
    server_factory: Callable[..., MCPServer], outside: Path, ask: str
) -> None:
    user = User("allow-once")
    is_error, text = await call(server_factory(sandbox="bwrap", ask=ask), user, f"cp a.txt {outside}/x")

    assert not is_error, text
    assert (outside / "x").read_text() == "hello\nworld\n"
    (question,) = user.questions
    assert f"approving makes {outside} writable for this call" in question.message


@bwrap
@pytest.mark.parametrize(("decision", "action"), [("deny", "accept"), ("allow-once", "decline")])
async def test_a_leave_the_user_does_not_approve_stays_refused(
    server_factory: Callable[..., MCPServer], outside: Path, decision: str, action: str
) -> None:
    is_error, text = await call(server_factory(sandbox="bwrap"), User(decision, action), f"cp a.txt {outside}/x")

    assert is_error and "Refused" in text
    assert list(outside.iterdir()) == []


@bwrap
async def test_a_protected_file_is_refused_without_a_question(
    server_factory: Callable[..., MCPServer], workspace: Path
) -> None:
    (workspace / "SOUL.md").write_text("kind\n")  # a hermitcrab workspace: its persona files are protected
    user = User("allow-once")
    is_error, text = await call(server_factory(sandbox="bwrap"), user, "echo 'obey me' > AGENTS.md")

    assert is_error and "persona file" in text and "read-only" in text
    assert user.questions == [] and not (workspace / "AGENTS.md").is_file()


@bwrap
@pytest.mark.parametrize(
    ("ask", "command", "reason"),
    [
        ("on-change", "echo x > made.txt", "writes inside the workspace"),
        ("on-miss", "touch made.txt", "not on the allowlist"),
    ],
)
async def test_the_parser_modes_ask_in_the_sandbox_too(
    server_factory: Callable[..., MCPServer], workspace: Path, ask: str, command: str, reason: str
) -> None:
    user = User("deny")
    is_error, _ = await call(server_factory(sandbox="bwrap", ask=ask), user, command)

    assert is_error and not (workspace / "made.txt").exists()
    (question,) = user.questions
    assert reason in question.message


@pytest.mark.parametrize(("ask", "asked"), [("on-leave", True), ("off", False)])
async def test_without_a_sandbox_a_miss_is_asked_or_refused(
    server_factory: Callable[..., MCPServer], workspace: Path, ask: str, asked: bool
) -> None:
    user = User("deny")
    server = server_factory(sandbox="none", ask=ask)
    is_error, text = await call(server, user, "touch made.txt")

    assert is_error and not (workspace / "made.txt").exists()
    assert len(user.questions) == asked and ("not on the allowlist" in text) != asked
    async with Client(server) as client:
        status = json.loads((await client.read_resource("exec://status")).contents[0].text)  # type: ignore[union-attr]
    assert (status["ask"], status["ask_given"]) == ("on-miss" if asked else "off", ask)


async def test_the_first_result_without_a_sandbox_says_what_that_means(
    server_factory: Callable[..., MCPServer],
) -> None:
    async with Client(server_factory(sandbox="none")) as client:
        first = await client.call_tool("exec", {"command": "echo one"})
        second = await client.call_tool("exec", {"command": "echo two"})

    note: Any = (first.structured_content or {}).get("note")
    assert note is not None and f"No sandbox on this server: {NO_SANDBOX}." in note
    assert NO_SANDBOX not in ((second.structured_content or {}).get("note") or "")


@pytest.mark.parametrize(
    ("command", "found"),
    [
        ("cp a {outside}/x", "leave"),
        ("env nice cp a -t {outside}", "leave"),
        ("cd {outside} && echo x > y", "leave"),
        ("echo x > /tmp/scratch", None),
        ("echo x > ~/notes", None),  # the sandbox's HOME is its own
        ("echo x > /dev/null 2>/dev/fd/2", None),
        ('echo x > "$f"', None),  # computed: the sandbox decides
        ("rm -rf sub && touch new", None),
        ("echo x > AGENTS.md", "refused"),
        ("echo x > memory/2026-01-01.md", "refused"),
        ("git init -q r && echo x > r/.git/hooks/pre-commit", "refused"),
        ("echo x > {state}/approvals.json", "refused"),
        ("mkdir /hermitcrab-no-such-top", "refused"),
    ],
)
def test_what_leaves_the_sandbox(command: str, found: str | None, workspace: Path, outside: Path, state: Path) -> None:
    (workspace / "SOUL.md").write_text("kind\n")
    leaves = Leaves([workspace], "/root", hidden=[state], private_home=Path("/root"))
    line = command.format(outside=outside, state=state)
    verdict = leaves.judge(Verdict(), line, workspace)

    kinds = {"refused" if verdict.refusal else None} | {"leave" for m in verdict.misses if isinstance(m, LeaveMiss)}
    assert kinds - {None} == ({found} if found else set()), verdict
    assert all(m.widen == outside for m in verdict.misses if isinstance(m, LeaveMiss))


@pytest.mark.parametrize(
    ("sandbox", "ask", "said"),
    [
        pytest.param("bwrap", "on-leave", "runs without asking, even one off the allowlist", marks=bwrap),
        ("none", "on-leave", "A command off the allowlist needs the user's approval."),
        ("none", "on-change", "changes files or settings"),
    ],
)
async def test_the_exec_tool_tells_the_model_what_is_asked(
    server_factory: Callable[..., MCPServer], sandbox: str, ask: str, said: str
) -> None:
    async with Client(server_factory(sandbox=sandbox, ask=ask)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert said in (tools["exec"].description or "")


def test_a_workspace_inside_a_hidden_home_is_still_the_workspace(tmp_path: Path) -> None:
    home = tmp_path / ".hermitcrab"  # hidden from commands, as the server hides its home, yet holding the root
    (home / "workspace").mkdir(parents=True)
    leaves = Leaves([home / "workspace"], "/root", hidden=[home], private_home=None)

    assert leaves.judge(Verdict(), "echo x > notes.txt", home / "workspace") == Verdict()
    assert leaves.judge(Verdict(), f"echo x > {home}/config.toml", home / "workspace").refusal is not None
