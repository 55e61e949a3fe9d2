"""A real Provider that replays queued completions, for loop and gateway tests (no HTTP involved)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hermitcrab.host.providers import Completion, Message, ToolCall, ToolSpec, Usage


@dataclass
class ScriptedProvider:
    label: str = "scripted"
    replies: list[Message] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)

    def say(self, text: str) -> ScriptedProvider:
        self.replies.append(Message("assistant", text))
        return self

    def call(self, *calls: tuple[str, str, dict[str, Any]]) -> ScriptedProvider:
        self.replies.append(Message("assistant", "", tuple(ToolCall(cid, name, args) for cid, name, args in calls)))
        return self

    async def complete(self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Completion:
        self.seen.append({"system": system, "messages": list(messages), "tools": [t.name for t in tools]})
        if not self.replies:
            raise AssertionError("the scripted provider ran out of replies")
        return Completion(self.replies.pop(0), Usage(100, 10), model="scripted-model", provider=self.label)
