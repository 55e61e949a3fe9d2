"""Streamed replies in the terminal, end to end: `chat` on a pty and `ask --stream`, against the scripted LLM streaming.

The scripted stream holds its last words back until the test lets them go, so "the first words show before the last
arrive" is an order of events, not a race against a clock.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tests.support.chat_terminal import CTRL_D, Terminal
from tests.support.cli import CLI, cli_env, wait_for
from tests.support.fake_llm import FakeLLM, Reply, openai_text, openai_tool_calls

FIRST = "The hermit crab carries"
LAST = "its **borrowed shell** everywhere."
ANSWER = f"{FIRST} {LAST}"
HELD_AFTER = 5  # the role chunk and four words ("The hermit crab carries") go out, the rest waits


def test_chat_on_a_terminal_shows_the_first_words_before_the_last_arrive_then_the_rendered_reply(
    hermitcrab_home: Path, llm: FakeLLM
):
    llm.enqueue(Reply(openai_text(ANSWER), hold_after=HELD_AFTER))
    chat = Terminal(hermitcrab_home, llm, term="xterm")
    try:
        wait_for(lambda: chat.cursor_line == "you>", f"chat did not start: {chat.screen}", timeout_s=60)
        chat.type("tell me about crabs\r")
        wait_for(lambda: FIRST in chat.output, f"the first words never showed: {chat.output}")
        assert "borrowed" not in chat.output  # the model has not sent them yet
        llm.release()
        wait_for(lambda: chat.screen.endswith("everywhere.\nyou>"), f"the reply never finished: {chat.screen}")
        chat.type(CTRL_D)
        assert chat.process.wait(timeout=30) == 0
    finally:
        chat.close()

    after = chat.output.split("tell me about crabs", 1)[1]
    assert f"{FIRST} its borrowed shell everywhere." in after  # erased and rendered as Markdown once complete
    assert llm.requests[0]["stream"] is True


def test_ask_stream_writes_the_reply_to_stdout_as_it_comes_and_tool_lines_to_stderr(
    hermitcrab_home: Path, llm: FakeLLM, desktop_config: Callable[..., Path]
):
    llm.enqueue(openai_tool_calls(("c1", "add", '{"a": 2, "b": 40}')), Reply(openai_text(ANSWER), hold_after=3))
    ask = subprocess.Popen(
        [*CLI, "ask", "--mcp-config", str(desktop_config()), "--stream", "What is 2 + 40?"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(hermitcrab_home, llm),
    )
    out, err = Collected(ask.stdout), Collected(ask.stderr)
    try:
        wait_for(lambda: b"The hermit" in out.data, f"no streamed words on stdout: {out.data!r} {err.data!r}")
        assert out.data == b"The hermit" and len(llm.requests) == 2  # the rest of the answer is still held
        llm.release()
        assert ask.wait(timeout=60) == 0, err.data
    finally:
        ask.kill()

    out.done.join(timeout=10)
    err.done.join(timeout=10)
    assert out.data.decode() == ANSWER + "\n"  # the reply once, as the model wrote it
    assert '↳ add {"a": 2, "b": 40}' in err.data.decode()


def test_ask_stream_prints_words_said_before_a_tool_call_once_and_the_reply_once(
    hermitcrab_home: Path, llm: FakeLLM, desktop_config: Callable[..., Path]
):
    before = openai_tool_calls(("c1", "add", '{"a": 2, "b": 40}'))
    before["choices"][0]["message"]["content"] = "Let me add."
    llm.enqueue(before, openai_text(ANSWER))

    ask = subprocess.run(
        [*CLI, "ask", "--mcp-config", str(desktop_config()), "--stream", "What is 2 + 40?"],
        capture_output=True,
        text=True,
        env=cli_env(hermitcrab_home, llm),
        timeout=60,
    )

    assert ask.returncode == 0, ask.stderr
    assert ask.stdout == f"Let me add.\n{ANSWER}\n"  # not the reply a second time after it streamed


class Collected:
    """What a pipe has carried so far, read by a thread of its own (a read must never block the test)."""

    def __init__(self, pipe: IO[bytes] | None) -> None:
        assert pipe is not None
        self.data = b""
        self.done = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.done.start()

    def _read(self, pipe: IO[bytes]) -> None:
        while chunk := pipe.read1(4096):
            self.data += chunk


def test_ask_without_stream_prints_the_final_reply_only_and_asks_for_no_stream(
    hermitcrab: Callable[..., subprocess.CompletedProcess[str]], llm: FakeLLM
):
    llm.enqueue(openai_text(ANSWER))

    result = hermitcrab("ask", "Crabs?")

    assert result.returncode == 0, result.stderr
    assert result.stdout == ANSWER + "\n"
    assert "stream" not in llm.requests[0]
