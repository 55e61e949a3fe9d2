"""A model that answers with half of a UTF-16 surrogate pair (`"\\ud83d"` alone, as small local models do) breaks
nothing: the reply arrives with U+FFFD in its place, and the session it is recorded in keeps answering."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_llm import openai_text


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_reply_with_half_a_surrogate_pair_is_answered_and_the_session_goes_on(
    hermitcrab, llm, tmp_path: Path, streamed: bool
):
    none = tmp_path / "none.json"
    none.write_text('{"mcpServers": {}}')
    llm.enqueue(openai_text("smile \ud83d please"), openai_text("still here"))
    stream = ["--stream"] if streamed else []

    first = hermitcrab("ask", *stream, "--mcp-config", str(none), "hi")
    second = hermitcrab("ask", "--mcp-config", str(none), "again")

    assert first.returncode == 0, first.stderr
    assert "smile \ufffd please" in first.stdout
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "still here"
