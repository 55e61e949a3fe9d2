"""An MCPServer whose failures read as one or two plain lines, and whose protocol answers are the spec's.

The SDK answers arguments that fail the input schema with pydantic's multi-line dump, and any unexpected exception
with a bare "Error executing tool X". Both reach the model, which can fix neither without knowing what was wrong.
It also answers an unknown prompt with error code 0 (or -32603 and a traceback in the 2026-07-28 era), ignores a
list request's cursor, and reports its version as "": a client (or the conformance suite) is told -32602 and the
package version instead.
"""

from __future__ import annotations

import errno
from importlib.metadata import version
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult
from pydantic import ValidationError

from .arguments import describe_invalid, quote

_ERRNO_ADVICE = {
    errno.ENAMETOOLONG: "a path or one of its names is too long (a name has at most 255 bytes); use a shorter one",
    errno.ELOOP: "a path goes round a loop of symbolic links; use the real path",
    errno.EACCES: "permission denied; this file or folder cannot be used",
    errno.ENOSPC: "the disk is full",
}


_LISTS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})


class GuardedServer(MCPServer[Any]):
    """MCPServer with readable errors: use it in place of MCPServer (same constructor).

    Arguments that fail the schema become `describe_invalid`'s line or two; an unexpected OSError or
    UnicodeError becomes a sentence without its file names; any other crash says it was one, by type only. An
    unknown prompt and any list cursor are invalid params (-32602), and `serverInfo.version` is hermitcrab's.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("version", version("hermitcrab"))
        kwargs["middleware"] = [reject_cursors, *(kwargs.get("middleware") or ())]
        super().__init__(*args, **kwargs)

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        if name not in {prompt.name for prompt in await self.list_prompts()}:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {quote(name)}; prompts/list names this server's prompts")
        return await super().get_prompt(name, arguments, context)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:  # still logged with its traceback by the SDK, as a crash
            cause = exc.__cause__
            if isinstance(cause, OSError | UnicodeError):
                raise UnexpectedToolError(f"{name} failed: {describe_crash(cause)}.") from cause
            kind = type(cause).__name__ if cause is not None else "unknown"
            raise UnexpectedToolError(
                f"{name} failed with an internal error ({kind}), logged by the server; "
                "try other arguments, or tell the user if it keeps failing."
            ) from cause
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(describe_invalid(name, exc.__cause__)) from exc.__cause__
            raise


async def reject_cursors(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Answer a list request that carries a cursor with -32602, as the spec asks for a cursor the server never gave:
    MCPServer lists everything in one page, so it hands out none (and would otherwise start again from the top)."""
    if ctx.method in _LISTS and (ctx.params or {}).get("cursor") is not None:
        raise MCPError(INVALID_PARAMS, f"Invalid cursor for {ctx.method}: this server lists everything in one page")
    return await call_next(ctx)


def describe_crash(error: OSError | UnicodeError) -> str:
    """What went wrong, without file names or other argument text (the SDK withholds a crash's own message)."""
    if isinstance(error, UnicodeError):
        return "an argument holds characters that cannot be stored as UTF-8 (such as a lone surrogate); remove them"
    if error.errno in _ERRNO_ADVICE:
        return _ERRNO_ADVICE[error.errno]
    return f"{error.strerror or type(error).__name__}; check the path and other arguments"
