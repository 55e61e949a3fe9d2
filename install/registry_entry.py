"""`server.json` for the MCP registry, one per server, from the same settings table as the bundles.

Every server ships in the one PyPI distribution `hermitcrab`, its extra adding what it needs, so the package is
`hermitcrab` run by `uvx --from 'hermitcrab[NAME]==VERSION' hermitcrab-NAME`. The format has no field for a
console script named unlike its package: the `--from` runtime argument carries the extra and the version, and the
command name is said in the description of that argument.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from .server_settings import FACTS, Setting

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
DEFAULT_NAMESPACE = "io.github.hermitcrab"  # publish under your own: the registry checks who owns it
FORMATS = {"directory": "filepath", "string": "string", "number": "number"}


def server_json(name: str, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
    facts = FACTS[name]
    own = version("hermitcrab")
    from_argument = {
        "type": "named",
        "name": "--from",
        "value": f"hermitcrab[{name}]=={own}",
        "description": f"hermitcrab with the {name} extra; the command to run is hermitcrab-{name}",
    }
    switches = [{"type": "positional", "value": switch} for switch in facts.switches]
    return {
        "$schema": SCHEMA_URL,
        "name": f"{namespace}/hermitcrab-{name}",
        "title": facts.title,
        "description": facts.description,
        "version": own,
        "packages": [
            {
                "registryType": "pypi",
                "registryBaseUrl": "https://pypi.org",
                "identifier": "hermitcrab",
                "version": own,
                "runtimeHint": "uvx",
                "runtimeArguments": [from_argument],
                "transport": {"type": "stdio"},
                "packageArguments": [*switches, *(named_argument(setting) for setting in facts.settings)],
            }
        ],
    }


def named_argument(setting: Setting) -> dict[str, Any]:
    """A setting as a `--flag value` argument. A folder's default is only described: left out, the server picks
    the same folder itself, while a client passing `~/...` unexpanded (no shell) would name another."""
    argument: dict[str, Any] = {
        "type": "named",
        "name": setting.flag,
        "description": setting.description,
        "format": FORMATS[setting.kind],
        "isRequired": setting.default is None,
    }
    if setting.choices:
        argument["choices"] = list(setting.choices)
    if setting.kind == "directory" and setting.default is not None:
        shown = str(setting.default).replace("${HOME}", "~")
        argument["description"] = f"{setting.description} (default {shown})"
    elif setting.default is not None:
        argument["default"] = str(setting.default)
    return argument
