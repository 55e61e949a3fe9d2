"""A test client's elicitation callback standing in for the user who answers approval questions."""

from __future__ import annotations

from typing import Any

import anyio
from mcp_types import ElicitRequestParams, ElicitResult


class User:
    """Records each question and answers `decision` after `delay_s` (or declines/cancels when `action` says so)."""

    def __init__(self, decision: str = "allow-once", action: str = "accept", delay_s: float = 0.0) -> None:
        self.decision, self.action, self.delay_s = decision, action, delay_s
        self.questions: list[ElicitRequestParams] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.questions.append(params)
        await anyio.sleep(self.delay_s)
        content = {"decision": self.decision} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]
