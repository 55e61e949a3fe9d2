"""server.json for the MCP registry: every server's entry passes the registry's published JSON schema.

`tests/support/mcp-registry-server.schema.json` is the schema the registry publishes at SCHEMA_URL (version
2025-12-11, the registry's CurrentSchemaVersion), byte for byte: its SHA-256 is the one recorded below.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from hermitcrab.install.own_servers import OWN_SERVERS
from hermitcrab.install.registry_entry import SCHEMA_URL, server_json

SCHEMA = Path(__file__).parents[1] / "support" / "mcp-registry-server.schema.json"
SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"


@pytest.fixture(scope="module")
def validator() -> Draft7Validator:
    return Draft7Validator(json.loads(SCHEMA.read_text()), format_checker=Draft7Validator.FORMAT_CHECKER)


def test_the_vendored_schema_is_the_published_one():
    assert hashlib.sha256(SCHEMA.read_bytes()).hexdigest() == SCHEMA_SHA256
    assert json.loads(SCHEMA.read_text())["$id"] == SCHEMA_URL


@pytest.mark.parametrize("name", OWN_SERVERS)
def test_every_server_json_passes_the_registry_schema(validator: Draft7Validator, name: str):
    entry = server_json(name)

    assert [error.message for error in validator.iter_errors(entry)] == []
    assert entry["$schema"] == SCHEMA_URL
    (package,) = entry["packages"]
    assert (package["registryType"], package["identifier"], package["transport"]) == (
        "pypi",
        "hermitcrab",
        {"type": "stdio"},
    )
    assert package["runtimeArguments"][0]["value"] == f"hermitcrab[{name}]=={entry['version']}"


def test_the_schema_rejects_what_the_registry_would(validator: Draft7Validator):
    entry: dict[str, Any] = server_json("memory")
    entry["description"] = "x" * 101
    entry["packages"][0]["version"] = "latest"

    assert len(list(validator.iter_errors(entry))) == 2


def test_the_cli_prints_the_entry_under_the_namespace_given():
    result = CliRunner().invoke(app, ["server-json", "cron", "--namespace", "io.github.dana"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == server_json("cron", "io.github.dana")
    assert json.loads(result.output)["name"] == "io.github.dana/hermitcrab-cron"
