"""The hermitcrab exception tree; only the CLI and channels turn these into text for the user.

HermitcrabError
 ├── ConfigError            config.toml or the environment is missing or wrong
 ├── ProviderError          an LLM provider failed
 │    ├── RetryableProviderError   429, 5xx, timeouts: worth another try
 │    ├── ContextOverflowError     the conversation no longer fits the model's window: compact, then retry
 │    └── AllProvidersFailed       every configured profile failed
 ├── StreamCutError         a model's stream broke off after its first words were shown: not failed over
 └── ToolServerError        an MCP server could not be started or reached
"""

from __future__ import annotations


class HermitcrabError(Exception):
    """Base of every error hermitcrab raises on purpose."""


class ConfigError(HermitcrabError):
    """The configuration is missing something or holds a wrong value."""


class ProviderError(HermitcrabError):
    """An LLM provider answered with an error or could not be reached."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RetryableProviderError(ProviderError):
    """A transient failure (rate limit, server error, timeout)."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ContextOverflowError(ProviderError):
    """The provider refused the request because the conversation is longer than its context window."""


class AllProvidersFailed(ProviderError):
    """Every configured provider profile failed; the message lists why each one did."""


class StreamCutError(HermitcrabError):
    """A streamed answer broke off after some of it reached the listeners: trying another profile would say it twice.

    Not a ProviderError, so failover lets it through; the turn ends with `said` and a notice instead."""

    def __init__(self, message: str, *, said: str) -> None:
        super().__init__(message)
        self.said = said


class ToolServerError(HermitcrabError):
    """An MCP server could not be started, reached or called."""
