"""The People page: who may talk to the assistant — strangers waiting with a pairing code (approve, deny), the users
let in (revoke), the owners, and what `[discord]` in config.toml allowlists.

Decisions go through the same `PairingStore` calls as `hermitcrab pairing approve|deny|revoke`, on the same file, so
the running Discord channel (which watches it) tells an approved user they are in, exactly as after the command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Generic, Literal, TypeVar

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from hermitcrab.channels.pairing import Allowed, Denied, PairingStore
from hermitcrab.channels.pairing import Request as Waiting
from hermitcrab.host.config import DiscordSettings, Settings, TelegramSettings

from ..context import context
from ..render import done, page

TITLE = "People"
PATH = "/people"
SHOWN = 200  # rows per list: the owner's circle, not a directory; the rest is counted

DM_POLICIES = {
    "pairing": "A stranger who DMs the bot gets a pairing code and nothing else; they can talk once approved here.",
    "allowlist": "Only the users listed below (and those approved before) may DM the bot; strangers are ignored.",
    "open": "Anyone may DM the bot: every direct message reaches the assistant.",
    "disabled": "Direct messages are ignored, even the owners'.",
}


@dataclass(frozen=True)
class Person:
    """A user who may DM the assistant, and why: approved with a pairing code, or listed in `[discord] allow_from`."""

    channel: str
    user: str
    name: str | None
    kind: Literal["owner", "peer"]
    let_in: str
    since: float | None = None
    revocable: bool = False


T = TypeVar("T")


@dataclass(frozen=True)
class Capped(Generic[T]):
    """The first `SHOWN` of a list and how long it was, for a "showing N of M" line."""

    items: list[T]
    total: int


def _capped(items: list[T]) -> Capped[T]:
    return Capped(items[:SHOWN], len(items))


def _store(request: Request) -> PairingStore:
    return PairingStore(context(request).settings.state / "pairing")


async def show(request: Request) -> Response:
    discord = context(request).settings.discord
    store = _store(request)
    try:
        waiting, allowed, denied = await anyio.to_thread.run_sync(
            lambda: (store.pending(), store.allowed(), store.denied())
        )
    except (OSError, ValueError, TypeError) as exc:  # a torn or hand-edited file: say so, change nothing
        problem = (
            f"The pairing file {store.path} cannot be read ({exc}): nothing can be shown or decided here until it is "
            "repaired (removing it would forget every approval)."
        )
        waiting, allowed, denied = [], [], []
    else:
        problem = None
    return page(
        request,
        "people.html",
        TITLE,
        problem=problem,
        discord_on=discord.token is not None,
        dm_policy=DM_POLICIES[discord.dm_policy],
        waiting=_capped(sorted(waiting, key=lambda r: r.created)),
        people=_capped(_people(allowed, context(request).settings)),
        denied=_capped(sorted(denied, key=lambda d: -d.denied)),
        owners=discord.owners,
        guilds=sorted(discord.guilds.items()),
    )


def _people(allowed: list[Allowed], settings: Settings) -> list[Person]:
    """The approved users of every channel, newest first, then those the config allowlists."""
    approved = [
        Person(
            a.channel,
            a.user,
            a.name,
            _kind(a.channel, a.user, settings),
            f"pairing code {a.code}" if a.code else "approved by pairing",
            a.approved,
            revocable=True,
        )
        for a in sorted(allowed, key=lambda a: -a.approved)
    ]
    listed = [
        Person(channel, user, None, _kind(channel, user, settings), f"listed in [{channel}] allow_from")
        for channel, rules in _channels(settings).items()
        for user in rules.allow_from
    ]
    return approved + listed


def _channels(settings: Settings) -> dict[str, DiscordSettings | TelegramSettings]:
    """The chat channels whose users pair, by the name their pairing entries carry."""
    return {"discord": settings.discord, "telegram": settings.telegram}


def _kind(channel: str, user: str, settings: Settings) -> Literal["owner", "peer"]:
    """The principal a DM from `user` on `channel` gets (as that channel's access rules give it): an owner's rights
    if they are among that channel's owners (a Discord id is no Telegram owner), else a peer's."""
    rules = _channels(settings).get(channel)
    return "owner" if rules is not None and user in rules.owners else "peer"


async def approve(request: Request) -> Response:
    running = context(request).settings.discord.token is not None
    return await _decide(request, "code", partial(_approved, announced=running))


async def deny(request: Request) -> Response:
    return await _decide(request, "code", _denied)


async def revoke(request: Request) -> Response:
    """A row's Revoke: that channel's user only, whoever else shares their name or id elsewhere."""
    channel = (await request.form()).get("channel")
    if not isinstance(channel, str) or not channel:
        return done(request, PATH, "Nothing was changed: the form had no channel.")
    return await _decide(request, "user", partial(_revoked, channel=channel))


async def _decide(request: Request, field: str, action: Callable[[PairingStore, str], str]) -> Response:
    """Run `action` on the store with the form's `field`; its sentence (or what went wrong) is the notice."""
    value = (await request.form()).get(field)
    if not isinstance(value, str) or not value.strip():
        return done(request, PATH, f"Nothing was changed: the form had no {field}.")
    store = _store(request)
    try:
        notice = await anyio.to_thread.run_sync(action, store, value.strip())
    except LookupError as exc:
        notice = f"Nothing was changed: {exc.args[0]}."
    except (OSError, ValueError, TypeError) as exc:
        notice = f"Nothing was changed: the pairing file {store.path} cannot be read ({exc})."
    return done(request, PATH, notice)


def _approved(store: PairingStore, code: str, *, announced: bool) -> str:
    """`announced`: the Discord channel runs, and tells the user within seconds (else once it runs)."""
    approval = store.approve(code)
    if approval.already:
        return f"{_who(approval.allowed)} was already approved."
    told = "the bot tells them they are in" if announced else "the bot tells them they are in once Discord is on"
    return f"Approved {_who(approval.allowed)}; {told}."


def _denied(store: PairingStore, code: str) -> str:
    denial = store.deny(code)
    if denial.already:
        return f"{_who(denial.denied)} was already denied."
    return f"Denied {_who(denial.denied)}; their messages are ignored for a day."


def _revoked(store: PairingStore, user: str, *, channel: str) -> str:
    gone = store.revoke(user, channel)
    if not gone:
        raise LookupError(f"no approved {channel} user {user!r}")
    return "Revoked " + ", ".join(_who(a) for a in gone) + "; they can no longer DM the assistant."


def _who(user: Allowed | Denied | Waiting) -> str:
    return f"{user.name} ({user.channel} user {user.user})"


routes: list[BaseRoute] = [
    Route(PATH, show),
    Route(f"{PATH}/approve", approve, methods=["POST"]),
    Route(f"{PATH}/deny", deny, methods=["POST"]),
    Route(f"{PATH}/revoke", revoke, methods=["POST"]),
]
