"""Silent replies (`NO_REPLY`), which are never shown: not once whole, nor word by word while they stream."""

from __future__ import annotations

from ..events import TextDelta
from .stream import TurnStream

SILENT_REPLIES = frozenset({"NO_REPLY"})


def is_silent(text: str) -> bool:
    return text.strip() in SILENT_REPLIES


class Unsilenced:
    """Tells one message's text to the stream as it comes, except while it may still become a silent reply: its first
    characters wait until they cannot (`NO_REPLY` shows nothing, `NO one knows` shows at its third word)."""

    def __init__(self, stream: TurnStream) -> None:
        self.stream = stream
        self._held = ""
        self._passing = False

    def add(self, text: str) -> None:
        if self._passing:
            self.stream.emit(TextDelta(text))
            return
        self._held += text
        if not any(word.startswith(self._held.strip()) for word in SILENT_REPLIES):
            self._release()

    def end(self, text: str) -> None:
        """The message is whole as `text`: what was held is told unless it is silent; the next message starts."""
        if not self._passing and not is_silent(text):
            self._release()
        self._held, self._passing = "", False

    def _release(self) -> None:
        if self._held:
            self.stream.emit(TextDelta(self._held))
        self._held, self._passing = "", True
