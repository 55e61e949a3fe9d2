"""A scripted reply, as the server-sent events a streaming OpenAI-compatible or Anthropic server would send for it.

The fake LLM scripts whole JSON bodies; asked to stream, it sends the same answer split the way real servers split
it: one word per text chunk, a tool call's arguments in pieces, the usage at the end.
"""

from __future__ import annotations

import json
import re
from typing import Any

ARGUMENT_PIECE = 7


def words(text: str) -> list[str]:
    """`text` in pieces of one word each (with the whitespace before it), which add up to `text` again."""
    return re.findall(r"\s*\S+|\s+$", text)


def pieces(text: str, size: int = ARGUMENT_PIECE) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _frame(data: dict[str, Any] | str, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n"


def openai_frames(body: dict[str, Any]) -> list[str]:
    """A chat completions body as `chat.completion.chunk`s, a usage chunk and `[DONE]`."""
    choice = body["choices"][0]
    message = choice["message"]
    model = body.get("model", "")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _frame({"model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    frames = [chunk({"role": "assistant", "content": ""})]
    frames += [chunk({"content": word}) for word in words(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        frames.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": function["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        frames += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(function["arguments"])
        ]
    frames.append(chunk({}, choice.get("finish_reason") or "stop"))
    if "usage" in body:
        frames.append(_frame({"model": model, "choices": [], "usage": body["usage"]}))
    return [*frames, _frame("[DONE]")]


def anthropic_frames(body: dict[str, Any]) -> list[str]:
    """A Messages API body as `message_start`, content blocks with their deltas, `message_delta`, `message_stop`."""
    usage = body.get("usage", {})
    start = {key: body[key] for key in ("id", "type", "role", "model") if key in body}
    frames = [
        _frame(
            {
                "type": "message_start",
                "message": {**start, "content": [], "usage": {"input_tokens": 0, **_prompt_counts(usage)}},
            },
            "message_start",
        ),
        _frame({"type": "ping"}, "ping"),
    ]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": word} for word in words(block["text"])]
        else:
            opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(json.dumps(block["input"]))]
        frames.append(
            _frame({"type": "content_block_start", "index": index, "content_block": opened}, "content_block_start")
        )
        frames += [
            _frame({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta") for d in deltas
        ]
        frames.append(_frame({"type": "content_block_stop", "index": index}, "content_block_stop"))
    frames.append(
        _frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": body.get("stop_reason", "end_turn")},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
            "message_delta",
        )
    )
    return [*frames, _frame({"type": "message_stop"}, "message_stop")]


def _prompt_counts(usage: dict[str, Any]) -> dict[str, Any]:
    """The counts Anthropic knows before the answer (`message_start`): the prompt's, cached parts included."""
    return {key: value for key, value in usage.items() if key != "output_tokens"}
