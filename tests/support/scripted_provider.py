"""A real Provider that replays queued completions, for loop and gateway tests (no HTTP involved)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hermitcrab.host.providers import Completion, Message, TextSink, ToolCall, ToolSpec, Usage

from .fake_llm_stream import words


@dataclass
class ScriptedProvider:
    """Replays `replies` in order. Optional: `summary` answers every tool-less call (compaction's summaries)
    without using up the script; `count_input` reports input tokens as the request's characters / 4, like a
    provider's own count, instead of a flat 100. Given `on_delta`, a reply's text is told word by word, as a
    streaming provider would."""

    label: str = "scripted"
    replies: list[Message] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)
    summary: str | None = None
    count_input: bool = False

    def say(self, text: str) -> ScriptedProvider:
        self.replies.append(Message("assistant", text))
        return self

    def call(self, *calls: tuple[str, str, dict[str, Any]]) -> ScriptedProvider:
        self.replies.append(Message("assistant", "", tuple(ToolCall(cid, name, args) for cid, name, args in calls)))
        return self

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: TextSink | None = None,
    ) -> Completion:
        self.seen.append({"system": system, "messages": list(messages), "tools": [t.name for t in tools]})
        usage = Usage(_chars(system, messages, tools) // 4 if self.count_input else 100, 10)
        if self.summary is not None and not tools:
            return Completion(Message("assistant", self.summary), usage, model="scripted-model", provider=self.label)
        if not self.replies:
            raise AssertionError("the scripted provider ran out of replies")
        reply = self.replies.pop(0)
        for word in words(reply.content) if on_delta is not None else []:
            on_delta(word)
        return Completion(reply, usage, model="scripted-model", provider=self.label)


def _chars(system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    calls = sum(len(c.name) + len(json.dumps(c.arguments)) for m in messages for c in m.tool_calls)
    specs = sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools)
    return len(system) + sum(len(m.content) + 16 for m in messages) + calls + specs
