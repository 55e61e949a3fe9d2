"""The Dockerfile's promises, read from the file itself; CI has no Docker daemon and no registry to build it with.

Its health check is the one part that runs here: the exact command, against a real webhook endpoint.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio

from hermitcrab.channels.webhook import WebhookChannel
from tests.support.fake_llm import free_port

ROOT = Path(__file__).parents[1]
HOME = "/home/hermitcrab/.hermitcrab"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) for each instruction, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(word.upper(), " ".join(rest.split())) for word, _, rest in (line.partition(" ") for line in lines)]


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for step in instructions():
        if step[0] == "FROM":
            found.append([])
        found[-1].append(step)
    return found


def arguments(stage: list[tuple[str, str]], instruction: str) -> list[str]:
    return [args for word, args in stage if word == instruction]


def defaults(stage: list[tuple[str, str]]) -> dict[str, str]:
    """ARG and ENV values of a stage, as NAME=value pairs."""
    pairs = [pair for args in arguments(stage, "ARG") + arguments(stage, "ENV") for pair in shlex.split(args)]
    return dict(pair.split("=", 1) for pair in pairs)


def test_the_image_runs_hermitcrab_run_as_an_unprivileged_user():
    final = stages()[-1]

    assert arguments(final, "USER") == ["hermitcrab"]
    assert any("useradd" in run and "hermitcrab" in run for run in arguments(final, "RUN"))
    user_at = final.index(("USER", "hermitcrab"))
    assert final.index(next(step for step in final if step[0] == "CMD")) > user_at
    command = json.loads(arguments(final, "CMD")[0])
    assert command[-1].endswith("exec hermitcrab run")
    assert json.loads(arguments(final, "ENTRYPOINT")[0]) == ["tini", "--"]


def test_the_home_is_a_volume_the_user_owns():
    final = stages()[-1]

    assert defaults(final)["HERMITCRAB_HOME"] == HOME
    assert arguments(final, "VOLUME") == [HOME]
    assert any(f"install -d -o hermitcrab -g hermitcrab {HOME}" in run for run in arguments(final, "RUN"))


def test_the_build_installs_every_extra_and_the_image_has_chromium_by_default():
    build, final = stages()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    assert defaults(build)["EXTRAS"] == "all" and "all" in extras
    assert any('pip install --no-cache-dir "/src[${EXTRAS}]"' in run for run in arguments(build, "RUN"))
    assert defaults(final)["CHROMIUM"] == "chromium"
    assert any("apt-get install" in run and "${CHROMIUM}" in run for run in arguments(final, "RUN"))


def test_the_build_copies_every_package_folder_and_dockerignore_lets_exactly_those_in():
    build = stages()[0]
    folders = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values())

    copied = {source for args in arguments(build, "COPY") for source in args.split()[:-1]}
    assert copied == {"pyproject.toml", "README.md", *folders}
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line for line in lines if line and not line.startswith("#")]
    assert patterns[0] == "*"  # everything is left out first, so only what is let in below goes in
    assert {pattern[1:] for pattern in patterns if pattern.startswith("!")} == copied


async def test_the_health_check_passes_while_the_webhook_serves_and_fails_when_it_does_not():
    final = stages()[-1]
    listen_port = defaults(final)["HERMITCRAB_WEBHOOK_LISTEN"].rpartition(":")[2]
    check = re.sub(r"^.*?CMD ", "", arguments(final, "HEALTHCHECK")[0])
    assert arguments(final, "EXPOSE") == [listen_port] and f"127.0.0.1:{listen_port}/healthz" in check
    port = free_port()
    argv = [sys.executable if word == "python" else word for word in shlex.split(check.replace(listen_port, str(port)))]

    async def submit(_: object) -> None: ...

    channel = WebhookChannel("token", submit, lambda: None)
    async with anyio.create_task_group() as group:
        await group.start(channel.serve, "127.0.0.1", port)
        serving = await anyio.run_process(argv, check=False)
        group.cancel_scope.cancel()
    stopped = subprocess.run(argv, capture_output=True, timeout=30)

    assert serving.returncode == 0, serving.stderr
    assert stopped.returncode != 0
