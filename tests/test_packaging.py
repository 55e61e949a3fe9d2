"""Each server installs alone: the wheel, installed with one server's extra into a fresh venv, runs that server and
holds none of the other parts' packages; installed bare, it says which extra a server needs.

The slow packaging test: it builds the wheel once and makes a venv per extra with uv, in parallel, offline from the
uv cache that scripts/test fills (bench/extras.py times it, cold and warm, against pip).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.extras import CORE, EXTRAS, ROOT
from tests.support.wheel import build_wheel, distributions, make_venv

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(600)]

SERVERS = sorted(path.parent.name for path in (ROOT / "servers").glob("*/__main__.py"))
NEEDING_AN_EXTRA = [server for server in SERVERS if EXTRAS[server]]
FULL_INSTALL = Path(sys.executable).parent
OFFLINE = {"UV_OFFLINE": "1"}  # scripts/test filled uv's cache; tests reach no network but loopback


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A venv per server extra, named by it, plus "core" without any extra."""
    wheel = build_wheel(tmp_path_factory.mktemp("wheel"), env=OFFLINE)
    root = tmp_path_factory.mktemp("venvs")
    wanted: dict[str, str | None] = {"core": None, **{server: server for server in SERVERS}}
    with ThreadPoolExecutor(len(wanted)) as pool:
        made = pool.map(lambda name: make_venv(root / name, wheel, wanted[name], env=OFFLINE), wanted)
        return dict(zip(wanted, made, strict=True))


async def tool_names(command: Path) -> list[str]:
    """The tools a server started as `command` over stdio lists."""
    async with Client(StdioServerParameters(command=str(command), env=dict(os.environ))) as client:
        return sorted(tool.name for tool in (await client.list_tools()).tools)


def run(command: Sequence[str | Path], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(map(str, command)), capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=60
    )


@pytest.mark.parametrize("server", SERVERS)
async def test_a_server_installed_with_its_extra_alone_lists_the_tools_of_the_full_install(
    venvs: dict[str, Path], server: str
):
    alone = await tool_names(venvs[server] / "bin" / f"hermitcrab-{server}")

    assert alone, f"hermitcrab-{server} listed no tools"
    assert alone == await tool_names(FULL_INSTALL / f"hermitcrab-{server}")


@pytest.mark.parametrize("venv", ["core", *SERVERS])
def test_a_venv_holds_its_extra_and_none_of_the_other_parts(venvs: dict[str, Path], venv: str):
    own = EXTRAS.get(venv, set())
    others = set().union(*(names for extra, names in EXTRAS.items() if extra != venv)) - own - CORE

    installed = distributions(venvs[venv])

    assert own | CORE | {"hermitcrab"} <= installed
    assert not installed & others, f"the {venv} venv holds other parts' packages: {sorted(installed & others)}"


@pytest.mark.parametrize("server", NEEDING_AN_EXTRA)
def test_a_server_on_the_core_install_names_its_extra_in_one_line_and_exits_2(venvs: dict[str, Path], server: str):
    result = run([venvs["core"] / "bin" / f"hermitcrab-{server}"])

    assert result.returncode == 2
    assert result.stderr == f"hermitcrab-{server} needs the {server} extra: pip install 'hermitcrab[{server}]'\n"


@pytest.mark.parametrize(
    ("variable", "app", "extra"),
    [("DISCORD_TOKEN", "Discord", "discord"), ("TELEGRAM_BOT_TOKEN", "Telegram", "telegram")],
)
def test_run_with_a_bot_token_on_the_core_install_names_the_channels_extra_in_one_line(
    venvs: dict[str, Path], hermitcrab_home: Path, tmp_path: Path, variable: str, app: str, extra: str
):
    (hermitcrab_home / "config.toml").write_text("[heartbeat]\nevery_minutes = 0\n")
    no_servers = tmp_path / "mcp.json"
    no_servers.write_text('{"mcpServers": {}}')
    env = {
        **os.environ,
        "HERMITCRAB_PROVIDER": "openai",
        "HERMITCRAB_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "HERMITCRAB_LLM_API_KEY": "sk-unused",
        "HERMITCRAB_MODEL": "unused",
        variable: "a-bot-token",
    }

    result = run([venvs["core"] / "bin" / "hermitcrab", "run", "--mcp-config", no_servers], env)

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: a {app} bot token is configured but the {extra} extra is not installed: "
        f"pip install 'hermitcrab[{extra}]'"
    ]
