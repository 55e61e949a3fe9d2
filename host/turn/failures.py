"""What a user is told when a turn fails: what failed and what to try, never a provider's body or a traceback.

The full exception goes to the log; chat channels only ever see these sentences.
"""

from __future__ import annotations

from typing import cast

from ..errors import AllProvidersFailed, ConfigError, ContextOverflowError, ProviderError, ToolServerError

LOG_HINT = "the details are in the host log (state/logs/host.log)"


def failure_text(exc: BaseException) -> str:
    """One or two sentences for a chat channel about why a turn failed."""
    if isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        return failure_text(group.exceptions[0]) if len(group.exceptions) == 1 else _internal(group)
    if isinstance(exc, ContextOverflowError):
        return (
            "Sorry, this conversation no longer fits the model's context window, even after summarising it. "
            "Send /new to start a fresh session."
        )
    if isinstance(exc, AllProvidersFailed | ProviderError):
        return (
            "Sorry, I could not get an answer from the language model, so that turn failed. "
            f"Try again in a minute; if it keeps failing, run `hermitcrab doctor` ({LOG_HINT})."
        )
    if isinstance(exc, ConfigError):
        return f"Sorry, that turn failed because of a configuration problem: {exc}"
    if isinstance(exc, ToolServerError):
        return f"Sorry, a tool server failed during that turn ({LOG_HINT}). `/status` shows which servers are up."
    if isinstance(exc, TimeoutError):
        return f"Sorry, that turn took too long and was stopped. Try again, or ask for a smaller step ({LOG_HINT})."
    return _internal(exc)


def _internal(exc: BaseException) -> str:
    return f"Sorry, that turn failed because of an internal error ({type(exc).__name__}); {LOG_HINT}."
