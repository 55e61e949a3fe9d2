"""LLM providers behind one small interface; importing this package registers the built-in ones."""

from . import anthropic, openai
from .base import (
    Completion,
    FailoverProvider,
    Message,
    Provider,
    TextSink,
    ToolCall,
    ToolSpec,
    Usage,
    create,
    register,
)

__all__ = [
    "Completion",
    "FailoverProvider",
    "Message",
    "Provider",
    "TextSink",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "anthropic",
    "create",
    "openai",
    "register",
]
