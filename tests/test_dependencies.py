"""pyproject.toml declares, part by part, exactly the third-party distributions the installed code imports.

The core install is what the host needs (host/, install/, util/, channels/ but Discord, workspace/, servers/_common,
which every server uses); each server and the Discord channel add their own packages as an extra of the same name, so
that `pip install 'hermitcrab[memory]'` brings the memory server and nothing of the browser's.
"""

from __future__ import annotations

import ast
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.extras import CORE, EXTRAS, PROJECT, ROOT

PACKAGE_FOLDERS = ("host", "install", "util", "servers", "channels", "workspace", "dashboard")


def part_of(path: Path) -> str:
    """The extra a module belongs to: its server's name, "discord" or "telegram" for that channel, else "core"."""
    parts = path.relative_to(ROOT).parts
    if parts[0] == "servers" and len(parts) > 2 and parts[1] != "_common":
        return parts[1]
    if parts[:2] in (("channels", "discord"), ("channels", "telegram")):
        return parts[1]
    return "core"


def third_party_modules(path: Path) -> set[str]:
    """Top-level names of the third-party modules `path` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    tops = {name.split(".")[0] for name in names}
    return {top for top in tops if top not in sys.stdlib_module_names and top not in ("hermitcrab", "__future__")}


def imported_by_part() -> dict[str, dict[str, set[str]]]:
    """For each part, the distributions its modules import, each with the modules importing it."""
    owners = packages_distributions()
    found: dict[str, dict[str, set[str]]] = {}
    for folder in PACKAGE_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for module in third_party_modules(path):
                assert module in owners, f"{module} (imported by {path.relative_to(ROOT)}) is not installed"
                for distribution in owners[module]:
                    users = found.setdefault(part_of(path), {}).setdefault(canonicalize_name(distribution), set())
                    users.add(str(path.relative_to(ROOT)))
    return found


PARTS = sorted({part_of(path) for folder in PACKAGE_FOLDERS for path in (ROOT / folder).rglob("*.py")} - {"core"})
IMPORTED = imported_by_part()


@pytest.mark.parametrize("part", ["core", *PARTS])
def test_what_a_part_imports_comes_with_core_and_its_extra(part: str):
    installed = CORE | EXTRAS.get(part, set())
    missing = {name: sorted(users) for name, users in IMPORTED.get(part, {}).items() if name not in installed}
    assert not missing, f"{part} imports what neither the core nor its extra installs: {missing}"


@pytest.mark.parametrize("part", ["core", *PARTS])
def test_a_part_declares_nothing_it_does_not_import(part: str):
    declared = CORE if part == "core" else EXTRAS[part]
    unused = declared - set(IMPORTED.get(part, {}))
    assert not unused, f"declared for {part} in pyproject.toml but imported nowhere in it: {sorted(unused)}"
    if part != "core":
        assert not declared & CORE, f"the {part} extra repeats core dependencies: {sorted(declared & CORE)}"


def test_every_part_has_its_extra_and_all_is_every_part():
    assert set(EXTRAS) == set(PARTS)
    (everything,) = [Requirement(requirement) for requirement in PROJECT["optional-dependencies"]["all"]]
    assert everything.name == PROJECT["name"]
    assert everything.extras == set(PARTS)
