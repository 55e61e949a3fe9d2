"""`hermitcrab chat` on a terminal as a person types into it (a real pty, its screen kept by a terminal emulator):
history across runs, pastes and multi-line messages, Ctrl-C, and questions that only an answer typed after them
answers."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.chat_terminal import ALT_ENTER, CTRL_C, CTRL_D, PASTE_END, PASTE_START, UP, Terminal
from tests.support.cli import wait_for
from tests.support.fake_llm import FakeLLM, Reply, openai_text, openai_tool_calls

PROMPT, ANSWER = "you>", "answer>"


def started(home: Path, llm: FakeLLM, *args: str) -> Terminal:
    chat = Terminal(home, llm, *args, term="xterm")
    wait_for(lambda: chat.cursor_line == PROMPT, f"chat did not start: {chat.screen}", timeout_s=60)
    return chat


def said(llm: FakeLLM) -> list[str]:
    """The user's message of each request the model got."""
    return [request["messages"][-1]["content"] for request in llm.requests]


def test_pastes_and_continued_lines_are_one_message_ctrl_c_stops_a_turn_tab_completes_and_up_recalls_after_a_restart(
    hermitcrab_home: Path, llm: FakeLLM
):
    llm.enqueue(
        openai_text("one"), openai_text("two"), openai_text("three"), Reply(openai_text("too late"), delay_s=30)
    )
    llm.enqueue(openai_text("four"), openai_text("five"))
    chat = started(hermitcrab_home, llm)
    try:
        chat.type(f"{PASTE_START}def f():\r    return 1\rprint(f()){PASTE_END}\r")
        wait_for(lambda: chat.screen.endswith(f"one\n{PROMPT}"), f"no reply to the paste: {chat.screen}")
        chat.type(f"first line{ALT_ENTER}second line\r")
        wait_for(lambda: chat.screen.endswith(f"two\n{PROMPT}"), f"no reply to Alt-Enter: {chat.screen}")
        chat.type("go on \\\rand on\r")
        wait_for(lambda: chat.screen.endswith(f"three\n{PROMPT}"), f"no reply to the backslash: {chat.screen}")
        chat.type("tell me a very long story\r")
        wait_for(lambda: len(llm.requests) == 4, f"the slow turn never reached the model: {chat.screen}")
        chat.type(CTRL_C)
        wait_for(lambda: chat.cursor_line == PROMPT, f"no prompt after Ctrl-C: {chat.screen}")
        chat.type("are you there?\r")
        wait_for(lambda: chat.screen.endswith(f"four\n{PROMPT}"), f"the chat did not go on: {chat.screen}")
        chat.type("/sta")
        wait_for(lambda: chat.cursor_line == f"{PROMPT} /sta", f"the typing did not show: {chat.screen}")
        chat.type("\t")
        wait_for(lambda: chat.cursor_line == f"{PROMPT} /status", f"Tab completed nothing: {chat.screen}")
        chat.type("\r")
        wait_for(lambda: chat.screen.endswith(f"Dead letters: none\n{PROMPT}"), f"no /status: {chat.screen}")
        chat.type(CTRL_D)
        assert chat.process.wait(timeout=30) == 0
    finally:
        chat.close()
    assert said(llm) == [
        "def f():\n    return 1\nprint(f())",
        "first line\nsecond line",
        "go on \nand on",
        "tell me a very long story",
        "are you there?",
    ]
    assert "(cancelled by the user)" in chat.output and "too late" not in chat.output
    history = hermitcrab_home / "state" / "chat_history.jsonl"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600

    again = started(hermitcrab_home, llm)
    try:
        again.type(UP)
        wait_for(lambda: again.cursor_line == f"{PROMPT} /status", "Up recalled nothing")
        again.type(UP)
        wait_for(lambda: again.cursor_line == f"{PROMPT} are you there?", "Up recalled no earlier message")
        again.type("\r")
        wait_for(lambda: again.screen.endswith(f"five\n{PROMPT}"), f"the recalled line was not sent: {again.screen}")
    finally:
        again.close()
    assert said(llm)[-1] == "are you there?" and len(llm.requests) == 6


def exec_config(tmp_path: Path, root: Path) -> Path:
    """The real exec server, asking before any command off its allowlist."""
    args = ["-m", "hermitcrab.servers.exec", "--root", str(root), "--state", str(tmp_path / "exec-state")]
    args += ["--ask", "on-miss", "--sandbox", "none", "--approval-timeout", "60"]
    desktop = tmp_path / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {"exec": {"command": sys.executable, "args": args}}}))
    return desktop


def test_an_approval_takes_no_type_ahead_asks_again_after_yes_and_runs_on_its_number(
    hermitcrab_home: Path, llm: FakeLLM, tmp_path: Path
):
    root = tmp_path / "workspace"
    root.mkdir()
    llm.enqueue(openai_tool_calls(("x1", "exec", '{"command": "touch made.txt"}')), openai_text("Made it."))
    chat = started(hermitcrab_home, llm, "--mcp-config", str(exec_config(tmp_path, root)))
    try:
        chat.type("make a file\r1\r")  # the "1" is typed ahead, before any question
        wait_for(lambda: chat.cursor_line == ANSWER, f"no approval asked: {chat.screen}", timeout_s=30)
        assert "1. allow-once" in chat.screen and "3. deny" in chat.screen
        assert "not taken as its answer" in chat.screen and not (root / "made.txt").exists()
        chat.type("yes\r")
        wait_for(lambda: "Not taken" in chat.screen and chat.cursor_line == ANSWER, f"not asked again: {chat.screen}")
        assert not (root / "made.txt").exists()
        chat.type("1\r")
        wait_for(lambda: chat.screen.endswith(f"Made it.\n{PROMPT}"), f"the command did not run: {chat.screen}")
    finally:
        chat.close()
    assert (root / "made.txt").exists()
    assert "Not taken: yes is not one of the choices." in chat.output
    assert not llm.requests[1]["messages"][-1].get("is_error")


def test_a_reminder_arriving_at_the_prompt_is_printed_above_it_and_the_line_being_typed_stays(
    hermitcrab_home: Path, llm: FakeLLM, desktop_config: Callable[..., Path]
):
    item = json.dumps({"item": {"id": "job-1:run-1", "text": "remind the user to stretch"}})
    llm.enqueue(openai_tool_calls(("q1", "queue_push", item)), openai_text("Queued."))
    llm.enqueue(Reply(openai_text("Time to stretch!"), hold_after=1), openai_text("Done."))
    chat = started(hermitcrab_home, llm, "--mcp-config", str(desktop_config()))
    try:
        chat.type("remind me\r")
        wait_for(lambda: len(llm.requests) == 3, f"the server's event never ran: {chat.screen}")
        chat.type("half a")
        wait_for(lambda: chat.cursor_line == f"{PROMPT} half a", f"the typing did not show: {chat.screen}")
        llm.release()  # the reminder's turn ends while the prompt waits
        wait_for(lambda: "Time to stretch!" in chat.screen, f"the reminder never showed: {chat.screen}")
        assert chat.cursor_line == f"{PROMPT} half a" and chat.screen.index("Time to stretch!") < chat.screen.index(
            f"{PROMPT} half a"
        )
        chat.type(" message\r")
        wait_for(lambda: chat.screen.endswith(f"Done.\n{PROMPT}"), f"the typed line was lost: {chat.screen}")
    finally:
        chat.close()
    assert said(llm)[-1] == "half a message"
