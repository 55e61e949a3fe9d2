"""GuardedServer: schema failures and crashes reach the model as one or two readable lines."""

from __future__ import annotations

import errno
import os
from typing import Annotated, Literal

from mcp import Client
from pydantic import BaseModel, Field

from hermitcrab.servers._common.arguments import quote
from hermitcrab.servers._common.server import GuardedServer


def build() -> GuardedServer:
    server = GuardedServer("guarded")

    @server.tool()
    def lookup(name: Annotated[str, Field(max_length=10)], count: int = 1) -> str:
        """Fail in the ways a file tool can."""
        if name == "long":
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), "/secret/" + "a" * 300)
        if name == "bug":
            raise KeyError("internal detail")
        return name * count

    return server


async def error_of(client: Client, **arguments: object) -> str:
    result = await client.call_tool("lookup", arguments)
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]  # an error result carries one text block


async def test_schema_failures_name_the_argument_and_the_rule():
    async with Client(build()) as client:
        too_long = await error_of(client, name="x" * 1_000_000)
        several = await error_of(client, count="many")
    assert too_long == (
        "Invalid arguments for lookup: `name` is too long (1,000,000 characters; the limit is 10).\n"
        "Fix them as the tool's input schema says and call again."
    )
    assert several.startswith("Invalid arguments for lookup: `name` is required; `count`: input should be a valid")
    assert "'many'" in several and several.count("\n") == 1


async def test_crashes_are_described_without_their_details():
    async with Client(build()) as client:
        os_error = await error_of(client, name="long")
        bug = await error_of(client, name="bug")
    assert os_error.startswith("lookup failed: a path or one of its names is too long") and "secret" not in os_error
    assert bug.startswith("lookup failed with an internal error (KeyError)") and "internal detail" not in bug


class Cat(BaseModel):
    kind: Literal["cat"]


class Dog(BaseModel):
    kind: Literal["dog"]


async def test_a_message_quoting_the_input_is_cut_too():
    server = GuardedServer("tagged")

    @server.tool()
    def adopt(pet: Annotated[Cat | Dog, Field(discriminator="kind")]) -> str:
        """A tagged union, whose error message quotes the tag it got."""
        return pet.kind

    async with Client(server) as client:
        result = await client.call_tool("adopt", {"pet": {"kind": "x" * 10_000_000}})
    text = result.content[0].text  # type: ignore[union-attr]  # an error result carries one text block
    assert result.is_error and text.startswith("Invalid arguments for adopt: `pet`: input tag") and len(text) < 400


def test_quote_keeps_about_200_characters_and_says_how_long():
    assert quote("short") == "'short'"
    shown = quote("x" * 10_000_000)
    assert len(shown) < 220 and shown.endswith("... (10,000,000 characters)")
