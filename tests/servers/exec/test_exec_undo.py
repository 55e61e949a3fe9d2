"""Undo: what exec and the file tools change in the roots is recorded, listed and put back, across restarts and
crashes, in the sandbox and without it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.__main__ import config_from_args, parser
from hermitcrab.servers.exec.changes import UndoLimits
from hermitcrab.servers.exec.sandbox import probe
from tests.servers.exec.conftest import alive_with

pytestmark = pytest.mark.anyio
BWRAP = pytest.param(
    "bwrap", marks=pytest.mark.skipif(shutil.which("bwrap") is None or probe() is not None, reason="no bubblewrap")
)
Tree = dict[str, tuple[str, int, bytes | str | None]]  # path -> (kind, mode, content or link target)


@pytest.fixture
def make(workspace: Path, state: Path) -> Callable[..., MCPServer]:
    """A server that runs anything unasked (what is asked is not what these tests are about)."""

    def build(sandbox: str = "none", **undo: int) -> MCPServer:
        return build_server(
            roots=[workspace],
            state=state,
            policy=Policy(security="full", ask="off"),
            sandbox=sandbox,  # type: ignore[arg-type]
            undo=UndoLimits(**undo),
        )

    return build


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    content = result.structured_content or {}
    return content.get("result", content) if set(content) == {"result"} else content


async def refusal(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]


def tree(root: Path) -> Tree:
    """Every path under `root` with its kind, permission bits and bytes (or link target)."""
    found: Tree = {}
    for directory, folders, names in os.walk(root):
        for name in folders + names:
            path = Path(directory, name)
            info = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", stat.S_IMODE(info.st_mode), None)
            else:
                found[rel] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


def plant(workspace: Path) -> Tree:
    """A tree with the shapes undo must bring back: bytes, modes, links (one dangling), empty and deep folders."""
    project = workspace / "project"
    (project / "empty").mkdir(parents=True)
    (project / "deep" / "er").mkdir(parents=True)
    (project / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (project / "run.sh").chmod(0o755)
    (project / "deep" / "er" / "blob.bin").write_bytes(bytes(range(256)) * 40)
    (project / "deep" / "er" / "blob.bin").chmod(0o600)
    (project / "private").mkdir(mode=0o700)
    (project / "private" / "note.txt").write_text("kept\n")
    (project / "link").symlink_to("run.sh")
    (project / "dangling").symlink_to("../nowhere")
    return tree(workspace)


@pytest.mark.parametrize("sandbox", [BWRAP, "none"])
async def test_undo_restores_a_tree_removed_with_rm_rf(
    make: Callable[..., MCPServer], workspace: Path, sandbox: str
) -> None:
    before = plant(workspace)
    async with Client(make(sandbox)) as client:
        removed = await call(client, "exec", command="rm -rf project && echo new > made.txt")
        assert removed["sandboxed"] is (sandbox == "bwrap")
        assert not (workspace / "project").exists()
        assert removed["changed"] == "made.txt (added), project/ (5 files and 5 folders deleted)"
        undone = await call(client, "exec_undo")
    assert undone["undone"] == removed["change_id"] and undone["not_restored"] == []
    assert undone["restored"] == "made.txt (deleted), project/ (5 files and 5 folders added)"
    assert tree(workspace) == before


async def test_file_tools_are_undone_newest_first_by_default(make: Callable[..., MCPServer], workspace: Path) -> None:
    async with Client(make()) as client:
        wrote = await call(client, "write_file", path="docs/new/page.md", content="first\n")
        assert "Undo with exec_undo call_id=" in wrote
        await call(client, "write_file", path="a.txt", content="replaced\n")
        await call(client, "edit_file", path="a.txt", old_text="replaced", new_text="edited")
        listed = await call(client, "exec_changes")
        assert [(c["tool"], c["command"]) for c in listed["changes"]] == [
            ("edit_file", "a.txt"),
            ("write_file", "a.txt"),
            ("write_file", "docs/new/page.md"),
        ]
        assert listed["changes"][2]["added"] == ["docs/", "docs/new/", "docs/new/page.md"]
        assert listed["changes"][0]["modified"] == ["a.txt"]
        await call(client, "exec_undo")
        assert (workspace / "a.txt").read_text() == "replaced\n"
        await call(client, "exec_undo")
        assert (workspace / "a.txt").read_text() == "hello\nworld\n"
        await call(client, "exec_undo")
        assert not (workspace / "docs").exists()
        assert "no change to undo" in await refusal(client, "exec_undo")


async def test_undo_of_a_file_changed_again_is_refused_unless_forced_and_can_itself_be_undone(
    make: Callable[..., MCPServer], workspace: Path
) -> None:
    async with Client(make()) as client:
        first = await call(client, "exec", command="echo one > a.txt; echo gone > b.txt")
        await call(client, "write_file", path="a.txt", content="two\n")
        message = await refusal(client, "exec_undo", call_id=first["change_id"])
        assert "these changed again after it: a.txt" in message and "force=true" in message
        assert (workspace / "a.txt").read_text() == "two\n" and (workspace / "b.txt").exists()
        forced = await call(client, "exec_undo", call_id=first["change_id"], force=True)
        assert (workspace / "a.txt").read_text() == "hello\nworld\n" and not (workspace / "b.txt").exists()
        again = await refusal(client, "exec_undo", call_id=first["change_id"])
        assert f"already undone by {forced['call_id']}" in again
        await call(client, "exec_undo", call_id=forced["call_id"])  # redo
        assert (workspace / "a.txt").read_text() == "two\n" and (workspace / "b.txt").read_text() == "gone\n"
        assert "No change has the call id 'nope'" in await refusal(client, "exec_undo", call_id="nope")


async def test_a_folder_holding_files_made_later_is_not_removed_silently(
    make: Callable[..., MCPServer], workspace: Path
) -> None:
    async with Client(make()) as client:
        made = await call(client, "exec", command="mkdir -p out && echo 1 > out/one.txt")
        await call(client, "write_file", path="out/later.txt", content="mine\n")
        message = await refusal(client, "exec_undo", call_id=made["change_id"])
        assert "out/later.txt" in message
        await call(client, "exec_undo", call_id=made["change_id"], force=True)
    assert not (workspace / "out").exists()


async def test_a_forced_undo_never_writes_through_a_link_swapped_in(
    make: Callable[..., MCPServer], workspace: Path
) -> None:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (workspace / "d").mkdir()
    (workspace / "d" / "notes.txt").write_text("mine\n")
    async with Client(make()) as client:
        removed = await call(client, "exec", command="rm -rf d")
        await call(client, "exec", command=f"ln -s {outside} d")
        assert "these changed again after it: d" in await refusal(client, "exec_undo", call_id=removed["change_id"])
        await call(client, "exec_undo", call_id=removed["change_id"], force=True)
    assert list(outside.iterdir()) == []
    assert not (workspace / "d").is_symlink() and (workspace / "d" / "notes.txt").read_text() == "mine\n"


async def test_the_result_names_changed_files_within_a_bound(make: Callable[..., MCPServer]) -> None:
    async with Client(make()) as client:
        many = await call(client, "exec", command="for i in $(seq 300); do echo $i > file-$i.txt; done")
        assert many["changed"].startswith("file-1.txt (added), file-10.txt (added), ")
        assert many["changed"].endswith(" more") and len(many["changed"]) < 400
        listed = (await call(client, "exec_changes", limit=1))["changes"][0]
        assert listed["counts"] == {"added": 300, "modified": 0, "deleted": 0} and len(listed["added"]) == 50
        quiet = await call(client, "exec", command="cat a.txt")
        assert quiet["changed"] is None and quiet["change_id"] is None


async def test_a_background_command_reports_its_changes_when_it_ends(make: Callable[..., MCPServer]) -> None:
    async with Client(make()) as client:
        started = await call(client, "exec", command="sleep 0.3; echo late > late.txt", background=True)
        assert started["changed"] is None
        ended = await call(client, "process", action="poll", session_id=started["session_id"], wait_ms=20_000)
    assert ended["status"] == "exited" and ended["changed"] == "late.txt (added)"


async def test_changes_made_while_two_commands_ran_are_in_both_records(make: Callable[..., MCPServer]) -> None:
    async with Client(make()) as client:
        wait_for = "while [ ! -e {} ]; do sleep 0.02; done"
        background = await call(
            client, "exec", command=f"{wait_for.format('fg.txt')}; echo bg > bg.txt", background=True
        )
        foreground = await call(client, "exec", command=f"echo fg > fg.txt; {wait_for.format('bg.txt')}")
        ended = await call(client, "process", action="poll", session_id=background["session_id"], wait_ms=20_000)
        listed = {c["call_id"]: c for c in (await call(client, "exec_changes"))["changes"]}
    assert foreground["changed"] == "bg.txt (added), fg.txt (added)" == ended["changed"]
    assert listed[foreground["change_id"]]["shared_with"] == [ended["change_id"]]
    assert listed[ended["change_id"]]["shared_with"] == [foreground["change_id"]]


async def test_retention_drops_the_oldest_past_either_limit(make: Callable[..., MCPServer], workspace: Path) -> None:
    async with Client(make(keep=3)) as client:
        ids = [(await call(client, "exec", command=f"echo {n} > a.txt"))["change_id"] for n in range(5)]
        listed = await call(client, "exec_changes")
        assert [c["call_id"] for c in listed["changes"]] == ids[:1:-1] and listed["kept"] == 3
        assert "No change has the call id" in await refusal(client, "exec_undo", call_id=ids[0])
    size = 300_000  # five distinct versions of one file are 1.5 MB: a 1 MB budget keeps the newest few
    async with Client(make(mb=1)) as client:
        for n in range(5):
            await call(client, "write_file", path="big.txt", content=str(n) * size)
        listed = await call(client, "exec_changes")
        assert 1 <= listed["kept"] < 5 and listed["saved_mb"] <= 1.05
        await call(client, "exec_undo")
        assert (workspace / "big.txt").read_text() == "3" * size
    saved = sum(f.stat().st_size for f in (workspace.parent / "state" / "undo" / "blobs").rglob("*") if f.is_file())
    assert saved <= 1024 * 1024


async def test_a_file_too_big_to_save_says_it_cannot_be_undone(make: Callable[..., MCPServer], workspace: Path) -> None:
    async with Client(make(mb=1)) as client:
        await call(client, "exec", command="head -c 1500000 /dev/zero > huge.bin")
        removed = await call(client, "exec", command="rm huge.bin")
        assert "cannot be undone (not saved: too big or unreadable): huge.bin" in removed["changed"]
        assert (await call(client, "exec_changes", limit=1))["changes"][0]["cannot_undo"] == ["huge.bin"]
        assert "not saved (too big or unreadable): huge.bin" in await refusal(client, "exec_undo")
        forced = await call(client, "exec_undo", force=True)
    assert forced["not_restored"] == ["huge.bin: its earlier version was not saved (too big or unreadable)"]


async def test_undo_works_after_a_restart(make: Callable[..., MCPServer], workspace: Path) -> None:
    async with Client(make()) as client:
        changed = await call(client, "exec", command="rm a.txt && mkdir -p x/y && ln -s ../../sub x/y/up")
    (workspace / "outside-exec.txt").write_text("the owner's own edit\n")
    async with Client(make()) as client:
        await call(client, "exec_undo", call_id=changed["change_id"])
    assert (workspace / "a.txt").read_text() == "hello\nworld\n" and not (workspace / "x").exists()
    assert (workspace / "outside-exec.txt").read_text() == "the owner's own edit\n"


async def test_a_damaged_copy_is_reported_and_never_restored(
    make: Callable[..., MCPServer], workspace: Path, state: Path
) -> None:
    async with Client(make()) as client:
        await call(client, "exec", command="echo precious > keep.txt")
        await call(client, "exec", command="rm keep.txt")
        digest = hashlib.sha256(b"precious\n").hexdigest()
        (state / "undo" / "blobs" / digest[:2] / digest).write_bytes(b"garbage\n")  # a power cut, unfsynced
        undone = await call(client, "exec_undo")
    assert undone["not_restored"] == ["keep.txt: its saved copy is damaged (lost in a crash of the machine?)"]
    assert not (workspace / "keep.txt").exists()


async def test_undo_state_is_private(make: Callable[..., MCPServer], state: Path) -> None:
    async with Client(make()) as client:
        await call(client, "write_file", path="a.txt", content="new\n")
    undo = state / "undo"
    folders = [undo, *(p for p in undo.rglob("*") if p.is_dir())]
    files = [p for p in undo.rglob("*") if p.is_file()]
    assert files and {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}


async def test_empty_content_over_a_file_needs_overwrite(make: Callable[..., MCPServer], workspace: Path) -> None:
    async with Client(make()) as client:
        message = await refusal(client, "write_file", path="a.txt", content="")
        assert "pass overwrite=true" in message and (workspace / "a.txt").read_text() == "hello\nworld\n"
        await call(client, "write_file", path="empty.txt", content="")  # nothing there to lose
        await call(client, "write_file", path="a.txt", content="", overwrite=True)
        assert (workspace / "a.txt").read_text() == ""
        await call(client, "exec_undo")
    assert (workspace / "a.txt").read_text() == "hello\nworld\n"


async def test_undo_off_records_nothing(make: Callable[..., MCPServer], state: Path) -> None:
    async with Client(make(keep=0)) as client:
        done = await call(client, "exec", command="echo x > a.txt")
        assert done["change_id"] is None
        assert "Undo is off" in await refusal(client, "exec_undo")
        assert "Undo is off" in await refusal(client, "exec_changes")
    assert not (state / "undo").exists()


async def test_roots_too_big_to_walk_turn_undo_off_and_say_why(make: Callable[..., MCPServer], workspace: Path) -> None:
    for n in range(30):
        (workspace / f"f{n}.txt").write_text(f"{n}\n")
    async with Client(make(max_entries=20)) as client:
        done = await call(client, "exec", command="rm f1.txt")
        assert done["exit_code"] == 0 and done["change_id"] is None
        message = await refusal(client, "exec_undo")
        assert "more than 20 files and folders" in message and "--root" in message
        status = json.loads((await client.read_resource("exec://status")).contents[0].text)  # type: ignore[union-attr]
    assert "more than 20" in status["undo"]["off"]


@asynccontextmanager
async def stdio_server(workspace: Path, state: Path) -> AsyncIterator[tuple[Client, int]]:
    """A real `hermitcrab-exec` process over stdio, and its pid."""
    args = ["--root", str(workspace), "--state", str(state), "--sandbox", "none", "--security", "full", "--ask", "off"]
    client = Client(StdioServerParameters(command=sys.executable, args=["-m", "hermitcrab.servers.exec", *args]))
    await client.__aenter__()
    try:
        yield client, next(p for p in alive_with("hermitcrab.servers.exec") if str(state) in _cmdline(p))
    finally:
        with suppress(Exception):  # a killed server's session ends with a broken pipe
            await client.__aexit__(None, None, None)


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


async def test_a_crash_mid_call_corrupts_nothing_and_undo_still_works(workspace: Path, state: Path) -> None:
    marker = "31.4159"  # names the sleep the killed call leaves behind
    try:
        async with stdio_server(workspace, state) as (client, pid):
            first = await call(client, "exec", command="echo one > a.txt")

            async def doomed() -> None:
                with suppress(Exception):
                    await client.call_tool("exec", {"command": f"echo two > b.txt; sleep {marker}"})

            async with anyio.create_task_group() as group:
                group.start_soon(doomed)
                with anyio.fail_after(20):
                    while not (workspace / "b.txt").exists():
                        await anyio.sleep(0.02)
                os.kill(pid, signal.SIGKILL)
        for name in ("changes.json", "manifest.json", "pending.json"):
            json.loads((state / "undo" / name).read_text())
        async with stdio_server(workspace, state) as (client, _):
            listed = await call(client, "exec_changes")
            interrupted = listed["changes"][0]
            assert interrupted["interrupted"] is True and interrupted["added"] == ["b.txt"]
            assert interrupted["command"] == f"echo two > b.txt; sleep {marker}"
            await call(client, "exec_undo")
            await call(client, "exec_undo", call_id=first["change_id"])
        assert not (workspace / "b.txt").exists() and (workspace / "a.txt").read_text() == "hello\nworld\n"
    finally:
        for leftover in alive_with(marker):
            os.kill(leftover, signal.SIGKILL)


def test_the_undo_flags_become_the_server_config() -> None:
    assert config_from_args(parser().parse_args([]))["undo"] == UndoLimits()
    limited = config_from_args(parser().parse_args(["--undo-keep", "5", "--undo-mb", "0"]))["undo"]
    assert limited == UndoLimits(keep=5, mb=0) and not limited.on
