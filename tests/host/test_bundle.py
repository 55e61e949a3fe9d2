"""Claude Desktop bundles: each one passes the official `mcpb validate`, and started the way its manifest says, the
server lists exactly the tools the manifest names.

Claude Desktop runs a `uv` bundle as `uv run --directory <bundle> server/main.py ARGS`, uv first installing
`hermitcrab[NAME]==VERSION` from PyPI. Tests have no network, so here this checkout's Python, which has that same
package installed, runs the bundle's own `server/main.py` with the manifest's arguments, substituted as the MCPB
spec says (`${__dirname}`, `${HOME}` in defaults, `${user_config.KEY}`).
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app, main
from hermitcrab.install.own_servers import OWN_SERVERS
from hermitcrab.install.server_settings import FACTS
from tests.support.processes import help_of

MCPB = Path(__file__).parents[2] / ".cache" / "npm" / "node_modules" / ".bin" / "mcpb"
needs_mcpb = pytest.mark.skipif(
    shutil.which("node") is None or not MCPB.exists(),
    reason="node and the MCP Bundle CLI are installed by scripts/test",
)
UV_PREFIX = ["run", "--directory", "${__dirname}", "server/main.py"]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every server's bundle, built once through the CLI as a person would (`hermitcrab bundle NAME --out DIR`)."""
    out = tmp_path_factory.mktemp("dist")
    for name in OWN_SERVERS:
        result = CliRunner().invoke(app, ["bundle", name, "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == str(out / f"{name}.mcpb")
        # said at build time: the bundle needs the release on PyPI, and how to make one of this checkout instead
        assert f"installs hermitcrab[{name}]==" in result.stderr and "works only once that release is published" in (
            result.stderr
        )
        assert f"hermitcrab bundle {name} --local dist/hermitcrab-" in result.stderr
    return out


def unpack(bundles: Path, name: str, into: Path) -> tuple[Path, dict[str, Any]]:
    folder = into / name
    with zipfile.ZipFile(bundles / f"{name}.mcpb") as bundle:
        bundle.extractall(folder)
    return folder, json.loads((folder / "manifest.json").read_text())


def mcpb_validate(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MCPB), "validate", str(folder)], capture_output=True, text=True, timeout=60)


@needs_mcpb
@pytest.mark.parametrize("name", OWN_SERVERS)
def test_the_official_cli_unpacks_and_validates_every_bundle(bundles: Path, tmp_path: Path, name: str):
    folder = tmp_path / name
    unpacked = subprocess.run(
        [str(MCPB), "unpack", str(bundles / f"{name}.mcpb"), str(folder)], capture_output=True, text=True, timeout=60
    )
    assert unpacked.returncode == 0, unpacked.stdout + unpacked.stderr

    result = mcpb_validate(folder)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Manifest schema validation passes" in result.stdout
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["manifest_version"] == "0.4" and manifest["server"]["type"] == "uv"


@needs_mcpb
def test_the_official_cli_rejects_a_broken_manifest(bundles: Path, tmp_path: Path):
    folder, manifest = unpack(bundles, "memory", tmp_path)
    del manifest["server"]["mcp_config"]
    (folder / "manifest.json").write_text(json.dumps(manifest))

    assert mcpb_validate(folder).returncode != 0


def test_the_bundle_installs_the_servers_extra_at_this_version(bundles: Path, tmp_path: Path):
    folder, manifest = unpack(bundles, "cron", tmp_path)

    assert f'dependencies = ["hermitcrab[cron]=={manifest["version"]}"]' in (folder / "pyproject.toml").read_text()
    assert "from hermitcrab.servers.cron.__main__ import main" in (folder / "server" / "main.py").read_text()
    assert sorted(path.name for path in folder.rglob("*") if path.is_file()) == [
        "main.py",
        "manifest.json",
        "pyproject.toml",
    ]


@pytest.mark.parametrize("name", OWN_SERVERS)
async def test_started_as_the_manifest_says_the_server_lists_the_manifests_tools(
    bundles: Path, tmp_path: Path, name: str
):
    folder, manifest = unpack(bundles, name, tmp_path)
    home = tmp_path / "home"
    config = manifest["server"]["mcp_config"]
    assert config["command"] == "uv" and config["args"][: len(UV_PREFIX)] == UV_PREFIX
    values = user_config_values(manifest["user_config"], home, tmp_path / "chosen")
    args = [substitute(raw, folder, values) for raw in config["args"][len(UV_PREFIX) :]]
    params = StdioServerParameters(
        command=sys.executable, args=[str(folder / "server" / "main.py"), *args], env={"HOME": str(home)}
    )

    with anyio.fail_after(60):
        async with Client(params) as client:
            listed = (await client.list_tools()).tools

    listing = [{"name": tool.name, "description": inspect.cleandoc(tool.description or "")} for tool in listed]
    assert listing == manifest["tools"]  # as the server lists them, dedented
    assert len(listed) >= 4


def user_config_values(options: dict[str, Any], home: Path, chosen: Path) -> dict[str, str]:
    """What the app passes for each setting: its default (with `${HOME}`), or for a required folder one the person
    picked, which exists."""
    values: dict[str, str] = {}
    for key, option in options.items():
        assert not option.get("multiple")  # one value each: no argument expands into several
        if "default" in option:
            values[key] = str(option["default"]).replace("${HOME}", str(home))
        else:
            assert option["required"] and option["type"] == "directory"
            (chosen / key).mkdir(parents=True)
            values[key] = str(chosen / key)
    return values


def substitute(raw: str, folder: Path, values: dict[str, str]) -> str:
    """One manifest argument after the app's substitution."""
    text = raw.replace("${__dirname}", str(folder))
    return re.sub(r"\$\{user_config\.(\w+)\}", lambda match: values[match[1]], text)


def test_the_choices_a_setting_names_are_the_servers_own():
    """(A setting whose flag the server lacks fails the start above: argparse exits before MCP begins.)"""
    with_choices = [name for name in OWN_SERVERS if any(setting.choices for setting in FACTS[name].settings)]
    assert with_choices == ["exec"]
    shown = help_of("hermitcrab.servers.exec")
    for setting in FACTS["exec"].settings:
        if setting.choices:
            assert f"{setting.flag} {{{','.join(setting.choices)}}}" in shown


def test_an_unknown_server_is_a_clear_error(tmp_path: Path):
    result = CliRunner().invoke(app, ["bundle", "toaster", "--out", str(tmp_path / "dist")])

    assert result.exit_code == 2
    assert "unknown server 'toaster'" in result.output
    assert not (tmp_path / "dist").exists()


def test_a_server_that_does_not_start_is_one_line_and_no_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """As when the server's extra is not installed: its process exits at once, saying why on stderr."""
    monkeypatch.setattr("hermitcrab.install.bundle.launch_command", lambda name: "/bin/false")
    monkeypatch.setattr(sys, "argv", ["hermitcrab", "bundle", "cron", "--out", str(tmp_path / "dist")])

    with pytest.raises(SystemExit) as exited:
        main()

    assert exited.value.code == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: hermitcrab-cron did not start and list its tools, so no bundle was written"
    )
    assert not (tmp_path / "dist").exists()


def test_tool_descriptions_in_the_manifest_are_dedented(bundles: Path, tmp_path: Path):
    _, manifest = unpack(bundles, "memory", tmp_path)

    described = [tool["description"] for tool in manifest["tools"]]
    assert any("\n" in text for text in described)  # docstrings of several lines, as the servers write them
    for text in described:
        assert not any(line.startswith(" ") for line in text.splitlines()), text


def test_a_local_bundle_carries_the_wheel_and_installs_from_it(tmp_path: Path):
    own = version("hermitcrab")
    wheel = tmp_path / f"hermitcrab-{own}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as built:  # what `uv build --wheel` made, as far as the bundle cares
        built.writestr("hermitcrab/__init__.py", "")
    out = tmp_path / "dist"

    result = CliRunner().invoke(app, ["bundle", "spawn", "--out", str(out), "--local", str(wheel)])

    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # no published release needed
    with zipfile.ZipFile(out / "spawn.mcpb") as bundle:
        assert bundle.read(f"wheels/{wheel.name}") == wheel.read_bytes()
        project = tomllib.loads(bundle.read("pyproject.toml").decode())
    assert project["project"]["dependencies"] == [f"hermitcrab[spawn]=={own}"]
    assert project["tool"]["uv"]["sources"] == {"hermitcrab": {"path": f"wheels/{wheel.name}"}}


def test_a_local_bundle_refuses_a_wheel_of_another_version(tmp_path: Path):
    wheel = tmp_path / "hermitcrab-0.0.1-py3-none-any.whl"
    wheel.write_bytes(b"")

    result = CliRunner().invoke(app, ["bundle", "spawn", "--out", str(tmp_path), "--local", str(wheel)])

    assert result.exit_code != 0
    assert "is version 0.0.1, but this hermitcrab is" in str(result.exception)
