"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

McpConfigOption = Annotated[
    Path | None,
    typer.Option("--mcp-config", help="Claude Desktop JSON whose mcpServers replace the configured ones for this run."),
]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Log progress to stderr.")]
