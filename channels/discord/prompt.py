"""A question with choices as Discord buttons that only the person asked can press (an owner, when it was asked of
nobody in particular, as a cron job's or a webhook's approval is).

Anyone else who presses gets an ephemeral refusal (seen only by them) and the question stays open. The pressed
choice replaces the buttons, so the conversation shows what was decided and by whom. A message holds at most 25
buttons: the choices after those are listed in its text, numbered, and answered by typing (a name or a number).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

import anyio
import discord

REFUSAL = "Only the person this was asked of can answer it."
OWNERS_ONLY = "Only my owner can answer this."
_DANGER = frozenset({"deny", "no", "decline", "cancel", "reject"})
MAX_BUTTONS = 25


class ChoiceButtons(discord.ui.View):
    """One button per choice (the first 25); `answer` is set once the asked user pressed one.

    `text` is what the message says: the question, and the choices no button holds."""

    def __init__(self, question: str, choices: Sequence[str], asked: str | None, owners: Collection[str] = ()) -> None:
        super().__init__(timeout=None)
        self.question = question
        rest = [f"{number}. {choice}" for number, choice in enumerate(choices, 1)][MAX_BUTTONS:]
        self.text = "\n".join([question, "Or type one of:", *rest]) if rest else question
        self.asked = asked
        self.owners = owners
        self.answer: str | None = None
        self.answered = anyio.Event()
        prefix = uuid.uuid4().hex[:12]
        for index, choice in enumerate(choices[:MAX_BUTTONS]):
            self.add_item(_Choice(self, choice, f"hc:{prefix}:{index}", _style(choice, index)))

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        presser = str(interaction.user.id)
        if presser == self.asked or (self.asked is None and presser in self.owners):
            return True
        await interaction.response.send_message(REFUSAL if self.asked else OWNERS_ONLY, ephemeral=True)
        return False

    async def choose(self, interaction: discord.Interaction, choice: str) -> None:
        self.answer = choice
        self.stop()
        self.answered.set()
        decided = f"{self.question}\n\n→ **{choice}** (<@{interaction.user.id}>)"
        await interaction.response.edit_message(content=decided[:2000], view=None)


class _Choice(discord.ui.Button[ChoiceButtons]):
    def __init__(self, buttons: ChoiceButtons, choice: str, custom_id: str, style: discord.ButtonStyle) -> None:
        super().__init__(label=choice[:80], custom_id=custom_id, style=style)
        self.buttons = buttons
        self.choice = choice

    async def callback(self, interaction: discord.Interaction) -> None:
        await self.buttons.choose(interaction, self.choice)


def _style(choice: str, index: int) -> discord.ButtonStyle:
    if any(word in _DANGER for word in choice.lower().replace("-", " ").split()):
        return discord.ButtonStyle.danger
    return discord.ButtonStyle.primary if index == 0 else discord.ButtonStyle.secondary
