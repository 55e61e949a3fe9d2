"""Claude Desktop bundles (`.mcpb`) of our servers, one server each.

A bundle is a zip: `manifest.json` (MCPB manifest 0.4), `pyproject.toml` and `server/main.py`. The server type is
`uv`, the MCPB runtime in which the app installs the dependencies that `pyproject.toml` declares (here the server's
extra, `hermitcrab[NAME]` at this version) with its own uv, so the person installing needs no Python, and compiled
wheels (tantivy, numpy, pydantic) come for their platform; a `python` bundle would have to carry them inside.

The manifest's tools are not written by hand: the builder starts the server's console script (never importing it:
the host does not import servers) with the bundle's default settings and lists its tools over MCP.
"""

from __future__ import annotations

import inspect
import json
import tempfile
import zipfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment

from hermitcrab.host.errors import ToolServerError

from .own_servers import launch_command
from .server_settings import FACTS, ServerFacts

MANIFEST_VERSION = "0.4"  # the first with `uv` servers (marked experimental in the spec)
ENTRY_POINT = "server/main.py"
PLATFORMS = ["darwin", "linux"]  # the servers use POSIX process groups and signals
LIST_TIMEOUT_S = 60
WHEELS = "wheels"


def build_bundle(name: str, out_dir: Path, wheel: Path | None = None) -> Path:
    """Write `out_dir/NAME.mcpb` and return its path. With `wheel` (a hermitcrab wheel of this version, built from
    a checkout), the bundle carries it and uv installs hermitcrab from it instead of from PyPI."""
    own = version("hermitcrab")
    if wheel is not None:
        check_wheel(wheel, own)
    tools = anyio.run(listed_tools, name)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.mcpb"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("manifest.json", json.dumps(manifest(name, tools, own), indent=2) + "\n")
        bundle.writestr("pyproject.toml", pyproject(name, own, wheel.name if wheel else None))
        bundle.writestr(ENTRY_POINT, launcher(name))
        if wheel is not None:
            bundle.write(wheel, f"{WHEELS}/{wheel.name}")
    return path


def published_note(name: str) -> str:
    """What a bundle that installs from PyPI needs, said when it is built: that release, published."""
    own = version("hermitcrab")
    return (
        f"this bundle installs hermitcrab[{name}]=={own} from PyPI, so it works only once that release is published; "
        f"for a bundle of this checkout, build its wheel (uv build --wheel) and embed it: "
        f"hermitcrab bundle {name} --local dist/hermitcrab-{own}-py3-none-any.whl"
    )


def check_wheel(wheel: Path, own_version: str) -> None:
    """A hermitcrab wheel of the version that lists the tools, or a sentence saying what it is instead."""
    parts = wheel.name.split("-")
    if not wheel.is_file() or wheel.suffix != ".whl" or parts[0] != "hermitcrab":
        raise ToolServerError(f"{wheel} is no hermitcrab wheel (uv build --wheel makes dist/hermitcrab-*.whl)")
    if parts[1] != own_version:
        raise ToolServerError(f"{wheel.name} is version {parts[1]}, but this hermitcrab is {own_version}")


def manifest(name: str, tools: list[dict[str, str]], own_version: str) -> dict[str, Any]:
    facts = FACTS[name]
    return {
        "manifest_version": MANIFEST_VERSION,
        "name": f"hermitcrab-{name}",
        "display_name": facts.title,
        "version": own_version,
        "description": facts.description,
        "author": {"name": "hermitcrab"},
        "license": "MIT",
        "keywords": ["hermitcrab", name, "mcp"],
        "server": {
            "type": "uv",
            "entry_point": ENTRY_POINT,
            "mcp_config": {"command": "uv", "args": ["run", "--directory", "${__dirname}", ENTRY_POINT, *flags(facts)]},
        },
        "tools": tools,
        "compatibility": {"platforms": PLATFORMS, "runtimes": {"python": ">=3.11"}},
        "user_config": user_config(facts),
    }


def flags(facts: ServerFacts) -> list[str]:
    """The server's switches, then each setting's flag followed by the app's substitution of its value."""
    settings = [part for setting in facts.settings for part in (setting.flag, f"${{user_config.{setting.key}}}")]
    return [*facts.switches, *settings]


def user_config(facts: ServerFacts) -> dict[str, dict[str, Any]]:
    """The settings as the app asks for them; one without a default must be given at install."""
    config: dict[str, dict[str, Any]] = {}
    for setting in facts.settings:
        option: dict[str, Any] = {"type": setting.kind, "title": setting.title, "description": setting.description}
        if setting.default is None:
            option["required"] = True
        else:
            option["default"] = setting.default
        config[setting.key] = option
    return config


def pyproject(name: str, own_version: str, wheel: str | None = None) -> str:
    """The bundle's dependencies for the app's uv: the server's extra at the version that listed the tools, from
    the bundle's own `wheel` when it carries one."""
    source = f'\n[tool.uv.sources]\nhermitcrab = {{ path = "{WHEELS}/{wheel}" }}\n' if wheel else ""
    return (
        "[project]\n"
        f'name = "hermitcrab-{name}-bundle"\n'
        f'version = "{own_version}"\n'
        f'description = "{FACTS[name].description}"\n'
        'requires-python = ">=3.11"\n'
        f'dependencies = ["hermitcrab[{name}]=={own_version}"]\n'
        f"{source}"
    )


def launcher(name: str) -> str:
    return (
        f'"""hermitcrab-{name} started from its Claude Desktop bundle, once uv has installed hermitcrab[{name}]."""\n\n'
        f"from hermitcrab.servers.{name}.__main__ import main\n\n"
        "main()\n"
    )


async def listed_tools(name: str) -> list[dict[str, str]]:
    """The tools the server lists when started with the bundle's defaults, in a throw-away home."""
    with tempfile.TemporaryDirectory(prefix=f"hermitcrab-bundle-{name}-") as scratch:
        args = default_args(FACTS[name], Path(scratch))
        env = {**get_default_environment(), "HERMITCRAB_HOME": str(Path(scratch) / "home")}
        params = StdioServerParameters(command=launch_command(name), args=args, env=env)
        try:
            with anyio.fail_after(LIST_TIMEOUT_S):
                async with Client(params) as client:
                    listed = (await client.list_tools()).tools
        except Exception as exc:  # its own reason (a missing extra, a bad flag) went to stderr, above this line
            failed = f"hermitcrab-{name} did not start and list its tools, so no bundle was written"
            raise ToolServerError(failed) from exc
    return [{"name": tool.name, "description": inspect.cleandoc(tool.description or "")} for tool in listed]


def default_args(facts: ServerFacts, scratch: Path) -> list[str]:
    """The bundle's flags with each setting at its default (`${HOME}` being `scratch`), or a fresh folder in
    `scratch` for a folder that must be chosen at install."""
    args = list(facts.switches)
    for setting in facts.settings:
        if setting.default is None:
            value = scratch / "chosen" / setting.key
            value.mkdir(parents=True)
        else:
            value = str(setting.default).replace("${HOME}", str(scratch))
        args += [setting.flag, str(value)]
    return args
