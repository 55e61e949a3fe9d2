"""File tools: line-numbered reads, atomic writes, exact edits, listings, and path escapes refused everywhere."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from hermitcrab.servers.exec import build_server
from hermitcrab.servers.exec.files import Files
from hermitcrab.servers.exec.server import StateInsideRoot

pytestmark = pytest.mark.anyio


async def text(client: Client, tool: str, **args: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, args)
    return result.is_error, result.content[0].text  # type: ignore[union-attr]


@pytest.fixture(
    params=[
        ("read_file", {}),
        ("write_file", {"content": "x"}),
        ("edit_file", {"old_text": "a", "new_text": "b"}),
        ("list_dir", {}),
    ]
)
def file_tool(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["../outside.txt", "/etc/passwd", "sub/../../outside.txt", "link/secret.txt", "escape"])
def escape(request: pytest.FixtureRequest, workspace: Path) -> str:
    outside = workspace.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("secret\n")
    (workspace.parent / "outside.txt").write_text("secret\n")
    os.symlink(outside, workspace / "link")
    os.symlink(outside / "secret.txt", workspace / "escape")
    return request.param  # type: ignore[no-any-return]


async def test_path_escapes_are_refused_in_every_file_tool(
    server_factory: Callable[..., MCPServer], file_tool: tuple[str, dict[str, Any]], escape: str, workspace: Path
) -> None:
    name, extra = file_tool
    async with Client(server_factory()) as client:
        is_error, message = await text(client, name, path=escape, **extra)
    assert is_error and "outside the allowed roots" in message
    assert (workspace.parent / "outside" / "secret.txt").read_text() == "secret\n"


@pytest.mark.parametrize("state", ["home/state/exec", "home", "."])
def test_a_state_dir_overlapping_a_root_is_refused_at_start(tmp_path: Path, state: str) -> None:
    root = tmp_path / "home"
    root.mkdir()
    with pytest.raises(StateInsideRoot, match="overlaps the root"):
        build_server(roots=[root], state=tmp_path / state, sandbox="none")


async def test_read_with_line_numbers_and_paging(server_factory: Callable[..., MCPServer], workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    async with Client(server_factory()) as client:
        _, page = await text(client, "read_file", path="long.txt", offset=3, limit=2)
    assert page.splitlines() == ["     3\tline 3", "     4\tline 4", "[lines 3-4 of 10; pass offset=5 to read on]"]


async def test_binary_files_are_refused(server_factory: Callable[..., MCPServer], workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    async with Client(server_factory()) as client:
        is_error, message = await text(client, "read_file", path="blob.bin")
    assert is_error and "binary" in message


async def test_write_creates_parents_and_keeps_mode(server_factory: Callable[..., MCPServer], workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    async with Client(server_factory()) as client:
        assert not (await text(client, "write_file", path="new/dir/f.txt", content="héllo\n"))[0]
        assert not (await text(client, "write_file", path="run.sh", content="#!/bin/sh\n"))[0]
    assert (workspace / "new/dir/f.txt").read_text() == "héllo\n"
    assert script.read_text() == "#!/bin/sh\n" and script.stat().st_mode & 0o777 == 0o755


async def test_edit_exact_missing_ambiguous_and_replace_all(
    server_factory: Callable[..., MCPServer], workspace: Path
) -> None:
    target = workspace / "e.txt"
    target.write_text("a = 1\nb = 1\n")
    async with Client(server_factory()) as client:
        is_error, message = await text(client, "edit_file", path="e.txt", old_text="c = 1", new_text="c = 2")
        assert is_error and "not found" in message
        is_error, message = await text(client, "edit_file", path="e.txt", old_text="= 1", new_text="= 2")
        assert is_error and "2 times" in message
        assert not (await text(client, "edit_file", path="e.txt", old_text="a = 1", new_text="a = 9"))[0]
        assert not (await text(client, "edit_file", path="e.txt", old_text="= 1", new_text="= 3", replace_all=True))[0]
    assert target.read_text() == "a = 9\nb = 3\n"


async def test_list_dir_tree(server_factory: Callable[..., MCPServer], workspace: Path) -> None:
    (workspace / "sub" / "deep.txt").write_text("x" * 2048)
    async with Client(server_factory()) as client:
        _, shallow = await text(client, "list_dir")
        _, deep = await text(client, "list_dir", path=".", depth=2)
    assert "sub/" in shallow and "deep.txt" not in shallow and "a.txt  (12 B)" in shallow
    assert "    deep.txt  (2.0 KB)" in deep


@pytest.mark.parametrize("path", [".git/config", "sub/.git", ".git/hooks/pre-commit", "cfg"])
async def test_gits_own_files_cannot_be_written(
    server_factory: Callable[..., MCPServer], workspace: Path, path: str
) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    os.symlink(workspace / ".git" / "config", workspace / "cfg")
    async with Client(server_factory()) as client:
        for tool, extra in (
            ("write_file", {"content": "[alias]\n"}),
            ("edit_file", {"old_text": "[", "new_text": "x"}),
        ):
            is_error, message = await text(client, tool, path=path, **extra)
            assert is_error and "git's own files" in message, message
        assert (await text(client, "read_file", path=".git/config")) == (False, "     1\t[core]")
    assert (workspace / ".git" / "config").read_text() == "[core]\n"


async def test_huge_files_are_refused_not_loaded(server_factory: Callable[..., MCPServer], workspace: Path) -> None:
    with open(workspace / "big.txt", "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: no disk used
    async with Client(server_factory()) as client:
        for tool, extra in (("read_file", {}), ("edit_file", {"old_text": "a", "new_text": "b"})):
            is_error, message = await text(client, tool, path="big.txt", **extra)
            assert is_error and "look at parts of it with exec" in message


@pytest.mark.parametrize("tool", ["read", "write", "edit"])
def test_a_symlink_swapped_in_after_the_check_is_not_followed(workspace: Path, tmp_path: Path, tool: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("secret\n")
    (workspace / "d").mkdir()
    (workspace / "d" / "x.txt").write_text("mine\n")
    files = Files([workspace])
    checked = files.resolve

    def check_then_swap(path: str, *, write: bool = False, owner_approved: bool = False) -> Path:  # a `git checkout`
        resolved = checked(path, write=write, owner_approved=owner_approved)
        if (workspace / "d").is_dir() and not (workspace / "d").is_symlink():
            shutil.rmtree(workspace / "d")
            os.symlink(outside, workspace / "d")
        return resolved

    files.resolve = check_then_swap  # type: ignore[method-assign]
    with pytest.raises(ToolError, match="changed while"):
        if tool == "read":
            files.read("d/x.txt", 1, 10)
        elif tool == "write":
            files.write("d/x.txt", "pwned\n")
        else:
            files.edit("d/x.txt", "secret", "pwned", False)
    assert (outside / "x.txt").read_text() == "secret\n"


async def test_file_tools_refuse_the_hidden_credentials_even_inside_a_root(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (home / "notes.txt").write_text("fine\n")
    environ = {"HOME": str(home), "HERMITCRAB_HOME": str(tmp_path / "hc"), "PATH": "/usr/bin:/bin"}
    server = build_server(roots=[home], sandbox="none", environ=environ)
    async with Client(server) as client:
        for tool, extra in (("read_file", {}), ("write_file", {"content": "x"})):
            is_error, message = await text(client, tool, path=".ssh/id_rsa", **extra)
            assert is_error and "credentials hidden" in message
        assert not (await text(client, "read_file", path="notes.txt"))[0]
    assert (home / ".ssh" / "id_rsa").read_text() == "PRIVATE KEY\n"
