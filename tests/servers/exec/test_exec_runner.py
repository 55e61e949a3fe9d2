"""Running commands: process groups, timeouts that kill the whole tree, bounded output, safe decoding."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from hermitcrab.servers.exec.environment import child_environment
from hermitcrab.servers.exec.output import OutputBuffer, clean, render
from hermitcrab.servers.exec.processes import ProcessTable
from hermitcrab.servers.exec.runner import Job, Limits, Spec


def spec(workspace: Path, command: str, timeout_s: float = 10, **limits: int) -> Spec:
    env = child_environment({**os.environ, "OPENAI_API_KEY": "sk-secret"}, None)
    return Spec(command, workspace, env, timeout_s, Limits(**limits), None, [workspace])


async def test_runs_and_captures_both_streams(workspace: Path) -> None:
    job = Job(spec(workspace, "echo out; echo err >&2; exit 3"))
    assert await job.wait(10)
    assert (job.status, job.exit_code) == ("exited", 3)
    assert render(job.stdout, 100).text == "out\n"
    assert render(job.stderr, 100).text == "err\n"


async def test_secrets_in_the_server_environment_do_not_reach_commands(workspace: Path) -> None:
    job = Job(spec(workspace, "env"))
    assert await job.wait(10)
    text = render(job.stdout, 100_000).text
    assert "sk-secret" not in text and "OPENAI_API_KEY" not in text
    assert "GIT_CONFIG_KEY_0=core.hooksPath" in text


async def test_timeout_kills_children_and_grandchildren(
    workspace: Path, wait_gone: Callable[[str], Awaitable[None]]
) -> None:
    marker = "37.7311"
    command = f"sleep {marker} & bash -c 'sleep {marker} & sleep {marker}' & sleep {marker}"
    job = Job(spec(workspace, command, timeout_s=0.5))
    with anyio.fail_after(10):
        assert await job.wait(10)
    assert job.status == "timed_out"
    await wait_gone(marker)


async def test_leftover_background_processes_die_with_the_command(
    workspace: Path, wait_gone: Callable[[str], Awaitable[None]]
) -> None:
    marker = "41.2291"
    job = Job(spec(workspace, f"sleep {marker} & echo started"))
    assert await job.wait(10)
    assert job.status == "exited"
    await wait_gone(marker)


async def test_huge_output_is_cut_not_buffered(workspace: Path) -> None:
    job = Job(spec(workspace, "yes 0123456789 | head -c 30000000; echo END", output_bytes=10_000))
    with anyio.fail_after(20):
        assert await job.wait(20)
    head, cut, tail = job.stdout.snapshot()
    assert len(head) + len(tail) == 10_000
    assert cut == 30_000_004 - 10_000
    rendered = render(job.stdout, 3_000)
    assert rendered.text.startswith("0123456789") and rendered.text.rstrip().endswith("END")
    assert rendered.cut_bytes == 30_000_004 - 3_000
    assert len(rendered.text) < 3_200


async def test_stdin_can_be_written(workspace: Path) -> None:
    job = Job(spec(workspace, "read line; echo got:$line"))
    assert job.write(b"hello\n") == 6
    assert await job.wait(10)
    assert render(job.stdout, 100).text == "got:hello\n"


async def test_resource_limits_apply(workspace: Path) -> None:
    job = Job(spec(workspace, "ulimit -v; ulimit -f; ulimit -S -t; ulimit -H -t", memory_mb=512, file_size_mb=1))
    assert await job.wait(10)
    # CPU: the call's timeout + 5 s, and a hard limit 2 s higher, so going over it is SIGXCPU (reported), not SIGKILL
    assert render(job.stdout, 100).text.split() == [str(512 * 1024), "1024", "15", "17"]


async def test_the_process_cap_holds_without_the_sandbox_too(
    workspace: Path, wait_gone: Callable[[str], Awaitable[None]]
) -> None:
    job = Job(spec(workspace, "for i in $(seq 100); do sleep 52.113 & done; wait", timeout_s=60, processes=10))
    assert await job.wait(60)
    assert (job.status, job.limit) == ("killed", "killed: more than 10 processes at once")
    await wait_gone("52.113")


def test_decoding_is_safe() -> None:
    raw = b"ok \xff\xfe bad\r\n\x1b[31mred\x1b[0m\nprogress 10%\rprogress 100%\n" + b"x" * 5000
    text = clean(raw)
    assert "\ufffd" in text and "\x1b" not in text and "red" in text
    assert "progress 100%" in text and "progress 10%" not in text
    assert "chars cut" in text.splitlines()[-1]


def test_buffer_since_reports_cut_bytes() -> None:
    buffer = OutputBuffer(keep=10)
    buffer.write(b"abcde" + b"X" * 100 + b"vwxyz")
    assert buffer.since(0) == (b"abcdevwxyz", 100)
    assert buffer.since(50) == (b"vwxyz", 55)
    assert buffer.since(108) == (b"yz", 0)


def test_child_path_has_no_relative_entries_and_git_opens_no_editor() -> None:
    env = child_environment({"PATH": ":.:bin:/usr/bin::/bin:"}, None)
    assert env["PATH"] == "/usr/bin:/bin"  # bash would search the others in the working directory
    assert env["GIT_EDITOR"] == ":" and env["GIT_SEQUENCE_EDITOR"] == ":"  # `git commit` cannot start vi
    env = child_environment({"LANG": "zh_CN.GBK", "LC_ALL": "en_US.UTF-8", "LC_CTYPE": "ja_JP.SJIS"}, None)
    assert (env["LANG"], env["LC_ALL"], "LC_CTYPE" in env) == ("C.UTF-8", "en_US.UTF-8", False)


async def test_git_reads_no_bare_repository_the_model_made(workspace: Path) -> None:
    fake = workspace / "fake"
    for sub in ("objects", "refs"):
        (fake / sub).mkdir(parents=True)
    (fake / "HEAD").write_text("ref: refs/heads/main\n")
    (fake / "config").write_text("[alias]\n\tst = !echo pwned\n")
    job = Job(spec(workspace / "fake", "git st; git log"))
    assert await job.wait(10)
    assert "pwned" not in render(job.stdout, 1000).text
    assert "safe.bareRepository" in render(job.stderr, 1000).text  # not a repository unless named explicitly


async def test_the_table_counts_foreground_jobs_but_lists_only_sessions(workspace: Path) -> None:
    table = ProcessTable()
    foreground, background = Job(spec(workspace, "cat")), Job(spec(workspace, "cat"))
    for job in (foreground, background):
        table.track(job)
    table.add(background)
    assert table.running() == 2
    assert table.get(foreground.id) is None and table.get(background.id) is background
    assert [s.session_id for s in table.listing().sessions] == [background.id]
    foreground.kill()
    assert await foreground.wait(5)
    assert table.running() == 1
    table.kill_all()
    assert await background.wait(5)
    assert table.running() == 0 and table.get(background.id) is background  # finished sessions stay readable
