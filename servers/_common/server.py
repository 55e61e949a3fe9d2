"""An MCPServer whose failures read as one or two plain lines: argument errors and file-system crashes.

The SDK answers arguments that fail the input schema with pydantic's multi-line dump, and any unexpected exception
with a bare "Error executing tool X". Both reach the model, which can fix neither without knowing what was wrong.
"""

from __future__ import annotations

import errno
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from .arguments import describe_invalid

_ERRNO_ADVICE = {
    errno.ENAMETOOLONG: "a path or one of its names is too long (a name has at most 255 bytes); use a shorter one",
    errno.ELOOP: "a path goes round a loop of symbolic links; use the real path",
    errno.EACCES: "permission denied; this file or folder cannot be used",
    errno.ENOSPC: "the disk is full",
}


class GuardedServer(MCPServer[Any]):
    """MCPServer with readable errors: use it in place of MCPServer (same constructor).

    Arguments that fail the schema become `describe_invalid`'s line or two; an unexpected OSError or
    UnicodeError becomes a sentence without its file names; any other crash says it was one, by type only.
    """

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


def describe_crash(error: OSError | UnicodeError) -> str:
    """What went wrong, without file names or other argument text (the SDK withholds a crash's own message)."""
    if isinstance(error, UnicodeError):
        return "an argument holds characters that cannot be stored as UTF-8 (such as a lone surrogate); remove them"
    if error.errno in _ERRNO_ADVICE:
        return _ERRNO_ADVICE[error.errno]
    return f"{error.strerror or type(error).__name__}; check the path and other arguments"
