"""The dependency rules of the layout, checked by walking every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def absolute_imports(path: Path, package: list[str]) -> set[str]:
    """Every module name `path` (in `package`) imports, with relative imports resolved."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.add(".".join([*base, *(node.module or "").split(".")]).strip("."))
    return found


def imports(path: Path) -> set[str]:
    """Absolute `hermitcrab.*` names imported by a module."""
    found = absolute_imports(path, ["hermitcrab", *path.relative_to(ROOT).parent.parts])
    return {name for name in found if name.startswith("hermitcrab")}


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", modules("servers"), ids=lambda p: str(p.relative_to(ROOT)))
def test_servers_import_only_themselves_and_common(path: Path):
    own = "hermitcrab.servers." + path.relative_to(ROOT / "servers").parts[0]
    for name in imports(path):
        assert name.startswith((own, "hermitcrab.servers._common", "hermitcrab.util")), f"{path} imports {name}"


@pytest.mark.parametrize("path", modules("host"), ids=lambda p: str(p.relative_to(ROOT)))
def test_host_never_imports_a_server_and_only_the_cli_knows_channels_and_installing(path: Path):
    for name in imports(path):
        assert not name.startswith("hermitcrab.servers"), f"{path} imports {name}"
        if "cli" not in path.parts:
            assert not name.startswith(("hermitcrab.channels", "hermitcrab.install", "hermitcrab.dashboard")), (
                f"{path} imports {name}"
            )


@pytest.mark.parametrize("path", modules("install"), ids=lambda p: str(p.relative_to(ROOT)))
def test_installing_knows_the_host_but_not_the_cli_channels_or_servers(path: Path):
    for name in imports(path):
        assert name.startswith(("hermitcrab.install", "hermitcrab.host", "hermitcrab.util")), f"{path} imports {name}"
        assert not name.startswith(("hermitcrab.host.cli", "hermitcrab.channels")), f"{path} imports {name}"


@pytest.mark.parametrize("path", modules("channels"), ids=lambda p: str(p.relative_to(ROOT)))
def test_channels_import_only_host_events(path: Path):
    for name in imports(path):
        assert name.startswith(("hermitcrab.channels", "hermitcrab.host.events", "hermitcrab.util")), (
            f"{path} imports {name}"
        )


@pytest.mark.parametrize("path", modules("dashboard"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_dashboard_reads_the_host_and_channels_but_not_the_cli_servers_or_installing(path: Path):
    for name in imports(path):
        assert name.startswith(("hermitcrab.dashboard", "hermitcrab.host", "hermitcrab.channels", "hermitcrab.util")), (
            f"{path} imports {name}"
        )
        assert not name.startswith("hermitcrab.host.cli"), f"{path} imports {name}"


@pytest.mark.parametrize("path", modules("util"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_shared_helpers_import_nothing_of_hermitcrab_but_themselves(path: Path):
    for name in imports(path):
        assert name.startswith("hermitcrab.util"), f"{path} imports {name}"


def imported_tests(path: Path) -> set[str]:
    """The `tests.*` modules a test module imports."""
    found = absolute_imports(path, ["tests", *path.relative_to(ROOT / "tests").parent.parts])
    return {name for name in found if name == "tests" or name.startswith("tests.")}


TEST_MODULES = [path for path in modules("tests") if "support" not in path.relative_to(ROOT / "tests").parts]


@pytest.mark.parametrize("path", TEST_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_test_module_imports_only_the_shared_support_and_conftest_fixtures(path: Path):
    for name in imported_tests(path):
        assert name == "tests.support" or name.startswith("tests.support.") or name.endswith(".conftest"), (
            f"{path} imports {name}"
        )
