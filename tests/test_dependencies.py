"""pyproject.toml declares exactly the third-party distributions the installed code imports."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE_FOLDERS = ("host", "servers", "channels", "workspace")


def top_level_imports() -> dict[str, set[Path]]:
    """Third-party top-level module names imported by the package's code, and where."""
    found: dict[str, set[Path]] = {}
    for folder in PACKAGE_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in ("hermitcrab", "__future__"):
                        found.setdefault(top, set()).add(path.relative_to(ROOT))
    return found


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {normalized(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]) for requirement in project["dependencies"]}


def test_every_imported_distribution_is_declared_and_nothing_else():
    owners = packages_distributions()
    imported: dict[str, set[Path]] = {}
    for module, paths in top_level_imports().items():
        assert module in owners, f"{module} (imported by {sorted(map(str, paths))}) is not installed"
        for distribution in owners[module]:
            imported.setdefault(normalized(distribution), set()).update(paths)

    missing = {name: sorted(map(str, paths)) for name, paths in imported.items() if name not in declared()}
    unused = declared() - set(imported)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
    assert not unused, f"declared in pyproject.toml but imported nowhere: {sorted(unused)}"
