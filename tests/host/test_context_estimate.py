"""The context's estimate counts the tool specs the next request sends: on a lazy start a server's own list
replaces its cached one mid-turn."""

from __future__ import annotations

from pathlib import Path

from hermitcrab.host.config import AgentSettings
from hermitcrab.host.providers import ToolSpec
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.compaction import CHARS_PER_TOKEN
from hermitcrab.host.turn.context import ContextKeeper
from tests.support.scripted_provider import ScriptedProvider
from tests.support.toolboxes import Toolbox


class GrowingToolbox(Toolbox):
    """The test toolbox, plus the tools a server listed once it came up."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[ToolSpec] = []

    def specs(self) -> list[ToolSpec]:
        return [*super().specs(), *self.arrived]


def test_the_estimate_counts_tools_that_arrive_after_the_turn_began(tmp_path: Path):
    toolbox = GrowingToolbox()
    keeper = ContextKeeper(SessionStore(tmp_path).open("main"), ScriptedProvider(), toolbox, "S", AgentSettings())
    before = keeper.tokens([])

    toolbox.arrived.append(ToolSpec("search", "d" * 4_000, {"type": "object"}))

    assert keeper.tokens([]) >= before + 4_000 // CHARS_PER_TOKEN
