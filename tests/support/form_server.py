"""A small MCP server whose tool asks the user to fill in a form (an elicitation) and checks the answer's types as
strictly as a server built on the TypeScript SDK does: `"30"` for an integer field is refused, `30` taken.

Run it over stdio (the default) or streamable HTTP (`--http-port`); the host picks the protocol era.
"""

from __future__ import annotations

import argparse
from typing import Annotated, Literal

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel, ConfigDict, Field


class Profile(BaseModel):
    model_config = ConfigDict(strict=True)  # no "30" taken for 30

    age: int = Field(ge=0, le=150, description="Your age in years", json_schema_extra={"default": 30})
    """The default is the form's, not the model's: an answer without the age is refused, so a default the host
    applies is told apart from one the server would fill in."""


SHADES = tuple(f"shade-{number}" for number in range(1, 31))
"""More choices than a Discord message has buttons."""


class Shade(BaseModel):
    shade: Literal[SHADES]  # pyright: ignore[reportInvalidTypeForm]  # an enum of the 30 names


def ask_profile() -> Elicit[Profile]:
    return Elicit("How old are you?", Profile)


def ask_shade() -> Elicit[Shade]:
    return Elicit("Which shade?", Shade)


def build_server() -> MCPServer:
    server = MCPServer("forms")

    @server.tool()
    def profile(answer: Annotated[ElicitationResult[Profile], Resolve(ask_profile)], ctx: Context) -> str:
        """Ask the user's age; say what type the answer arrived as (or what the user did), and over which protocol
        version."""
        if not isinstance(answer, AcceptedElicitation):
            return f"{answer.action} over {ctx.protocol_version}"
        age = answer.data.age
        return f"age {age!r} ({type(age).__name__}) over {ctx.protocol_version}"

    @server.tool()
    def paint(answer: Annotated[Shade, Resolve(ask_shade)]) -> str:
        """Ask which of 30 shades to paint with."""
        return f"painted with {answer.shade}"

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http-port", type=int, help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    args = parser.parse_args()
    if args.http_port:
        build_server().run("streamable-http", host="127.0.0.1", port=args.http_port)
    else:
        build_server().run()
