"""A streamed webhook call end to end: `hermitcrab run` answers `POST /hooks/agent?stream=1` with the turn's events
while the scripted LLM is still writing."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.fake_llm import FakeLLM, Reply, openai_text
from tests.support.webhook_host import TOKEN, Host, hosts

ANSWER = " ".join(f"word{n}" for n in range(40))


@pytest.fixture
def start(hermitcrab_home: Path, llm: FakeLLM, tmp_path: Path) -> Iterator[Callable[[], Host]]:
    desktop = tmp_path / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {}}))
    with hosts(hermitcrab_home, llm, desktop, tmp_path) as launch:
        yield launch


def test_the_event_stream_delivers_the_deltas_in_order_while_the_model_writes_and_ends_with_turn_done(
    start, llm: FakeLLM
):
    host = start()
    llm.enqueue(Reply(openai_text(ANSWER), event_delay_s=0.03))
    received: list[tuple[float, dict[str, object]]] = []
    url = f"http://127.0.0.1:{host.port}/hooks/agent?stream=1"

    with httpx.stream("POST", url, json={"message": "count"}, headers={"Authorization": f"Bearer {TOKEN}"}) as answer:
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
        for line in answer.iter_lines():
            if line.startswith("data: "):
                received.append((time.monotonic(), json.loads(line.removeprefix("data: "))))

    events = [event for _, event in received]
    deltas = [event["text"] for event in events if event["type"] == "text_delta"]
    assert "".join(map(str, deltas)) == ANSWER and len(deltas) == 40
    assert events[-1]["type"] == "turn_done" and events[-1]["reply"] == ANSWER
    assert [event["type"] for event in events].count("turn_done") == 1
    first_delta = next(at for at, event in received if event["type"] == "text_delta")
    assert first_delta < llm.streamed_at[-1]  # the first words came while the model was still writing
    assert host.stop() == 0
