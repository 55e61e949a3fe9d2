"""What a person may set for each of our servers when installing it on its own, and the flag behind each setting.

Read from the servers' declared options (`hermitcrab.util.server_options`), so a Claude Desktop bundle's settings
(`bundle.py`), a registry entry's arguments (`registry_entry.py`) and the server's own command line offer the same
flags, choices and defaults. A default may say `${HOME}`, which the installing app fills in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hermitcrab.util.server_options import HOME, SERVERS, Ask, Option, ServerOptions


@dataclass(frozen=True)
class Setting:
    """One user-facing setting: its key, the flag it becomes, how it is asked for, its default (None: it must be
    chosen at install) and, for a flag with fixed choices, those (a bundle can only name them in the description)."""

    key: str
    flag: str
    kind: Literal["directory", "string", "number"]
    title: str
    description: str
    default: str | int | float | None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerFacts:
    """A server as an installer presents it: a title, one line (at most 100 characters), its settings and the
    switches every install gets."""

    title: str
    description: str
    settings: tuple[Setting, ...]
    switches: tuple[str, ...] = ()


def _setting(server: ServerOptions, option: Option) -> Setting:
    ask = option.install
    if not isinstance(ask, Ask):
        raise TypeError(f"{server.prog} {option.flag} is not a setting an installer asks for")
    return Setting(
        option.key,
        option.flag,
        _kind(option),
        ask.title,
        ask.description,
        _default(server, option, ask),
        option.choices or (),
    )


def _kind(option: Option) -> Literal["directory", "string", "number"]:
    if option.home_folder is not None:
        return "directory"
    return "number" if option.type in (int, float) else "string"


def _default(server: ServerOptions, option: Option, ask: Ask) -> str | int | float | None:
    """What an installer offers: the ask's own default, else the folder under the home, else the option's default
    (a whole number written as one)."""
    if ask.required:
        return None
    if ask.default is not None:
        return ask.default
    if option.home_folder == "workspace":
        return f"{HOME}/workspace"
    if option.home_folder == "uploads":
        return f"{HOME}/workspace/uploads"
    if option.home_folder == "state":
        return f"{HOME}/state/{server.name}"
    default = option.default
    return int(default) if isinstance(default, float) and default.is_integer() else default


FACTS: dict[str, ServerFacts] = {
    name: ServerFacts(
        server.title,
        server.summary,
        tuple(_setting(server, server.option(key)) for key in server.asked),
        server.switches,
    )
    for name, server in SERVERS.items()
}
