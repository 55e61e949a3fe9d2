"""Finding hooks: `HOOK.md` folders (workspace `hooks/`, the home's `hooks/`, `[hooks] extra_dirs`, the bundled
ones) and Python entry points in the `hermitcrab.hooks` group, each read into a `Hook` or a `Broken` with why.

A HOOK.md is read like a SKILL.md (the same frontmatter reader): `events`, then `command` (run with the event on
stdin) or `handler` (`module:attr`, a Python hook), `timeout_s`, `on_error`, `priority`; the body describes it.
Which hooks run is the owner's choice in config.toml (`[hooks] enabled`, `[hooks.<name>]`), never a file's: the
workspace is writable by the model's tools, so a HOOK.md cannot switch itself on.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shlex
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal, cast

from ..skills.catalog import SkillError, front_matter
from .events import EVENTS, HookContext, HookEvent

HOOK_FILE = "HOOK.md"
GROUP = "hermitcrab.hooks"
BUNDLED = Path(str(files("hermitcrab.host.hooks").joinpath("bundled")))
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_PRIORITY = 100
ON_BY_DEFAULT = frozenset({"session-capture"})
"""Bundled hooks that run unless config turns them off: what hermitcrab did before hooks existed."""
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")

OnError = Literal["allow", "deny"]
Handler = Callable[[HookEvent, dict[str, Any], HookContext], Awaitable[object]]
"""A Python hook, whatever its shape: called with the event's name, its payload and the context."""


class HookError(ValueError):
    """A hook that cannot be loaded as written; the message says what to fix."""


@dataclass(frozen=True)
class Hook:
    name: str
    events: tuple[HookEvent, ...]
    source: str
    """Where it was found: its HOOK.md, or `entry point <module:attr> (<distribution>)`."""
    description: str = ""
    command: tuple[str, ...] = ()
    """A command hook's program and arguments, the program relative to `folder` when it lies there."""
    folder: Path | None = None
    handler: Handler | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    on_error: OnError = "deny"
    """What a failed tool:before hook means for the call: refused (the default, fail closed) or let through."""
    priority: int = DEFAULT_PRIORITY
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True)
class Broken:
    """A hook found but not loaded, and why (shown by `hermitcrab hooks` and `doctor`)."""

    name: str
    source: str
    reason: str


def discover(dirs: Sequence[Path], group: str = GROUP) -> tuple[list[Hook], list[Broken]]:
    """Every hook in `dirs` (highest precedence first, then the bundled folder) and the entry points; a name seen
    twice keeps the first and the other is Broken."""
    found: list[Hook] = []
    broken: list[Broken] = []
    seen: set[str] = set()

    def add(item: Hook | Broken) -> None:
        if item.name in seen:
            broken.append(Broken(item.name, item.source, "a hook of that name was found before it"))
        elif isinstance(item, Hook):
            found.append(item)
        else:
            broken.append(item)
        seen.add(item.name)

    for folder in _hook_folders([*dirs, BUNDLED]):
        add(_read_folder(folder))
    for point in entry_points(group=group):
        add(_read_entry_point(point.name, point.value, point.dist.name if point.dist else "?"))
    return found, broken


def _hook_folders(dirs: Iterable[Path]) -> Iterable[Path]:
    for root in dirs:
        try:
            folders = sorted(p for p in root.iterdir() if (p / HOOK_FILE).is_file())
        except OSError:  # a root that does not exist (most do not) holds no hooks
            continue
        yield from folders


def _read_folder(folder: Path) -> Hook | Broken:
    file = folder / HOOK_FILE
    try:
        return read_hook(file)
    except (HookError, SkillError) as exc:
        return Broken(folder.name, str(file), str(exc))


def read_hook(file: Path) -> Hook:
    """One HOOK.md; HookError (SkillError from the shared frontmatter reader) naming what is wrong."""
    data, body = front_matter(file, "an events: list and a command: line")
    name = data.get("name", file.parent.name)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise HookError(f"name {name!r} should be 1-64 lowercase letters, digits, '-' or '_'")
    command, handler = data.get("command"), data.get("handler")
    if (command is None) == (handler is None):
        raise HookError("give exactly one of command (a program to run) or handler (module:attr of a Python hook)")
    hook = Hook(
        name=name,
        events=(),
        source=str(file),
        description=" ".join(body.split())[:300],
        folder=file.parent,
        timeout_s=_timeout(data.get("timeout_s", DEFAULT_TIMEOUT_S)),
        on_error=_on_error(data.get("on_error", "deny")),
        priority=_priority(data.get("priority", DEFAULT_PRIORITY)),
    )
    if handler is not None:
        if not isinstance(handler, str):
            raise HookError("handler must be a string, module:attr")
        events, call = python_handler(_load(handler), data.get("events"))
        return replace(hook, events=events, handler=call)
    return replace(hook, events=_events(data.get("events")), command=_command(command))


def _read_entry_point(name: str, value: str, dist: str) -> Hook | Broken:
    source = f"entry point {value} ({dist})"
    try:
        if not _NAME.fullmatch(name):
            raise HookError(f"name {name!r} should be 1-64 lowercase letters, digits, '-' or '_'")
        target = _load(value)
        events, call = python_handler(target, getattr(target, "events", None))
        return Hook(
            name=name,
            events=events,
            source=source,
            description=" ".join((inspect.getdoc(target) or "").split())[:300],
            handler=call,
            timeout_s=_timeout(getattr(target, "timeout_s", DEFAULT_TIMEOUT_S)),
            on_error=_on_error(getattr(target, "on_error", "deny")),
            priority=_priority(getattr(target, "priority", DEFAULT_PRIORITY)),
        )
    except HookError as exc:
        return Broken(name, source, str(exc))


def _load(reference: str) -> object:
    module, _, attr = reference.partition(":")
    try:
        found: object = importlib.import_module(module)
        for part in attr.split(".") if attr else []:
            found = getattr(found, part)
    except Exception as exc:  # an import runs someone's code: whatever it raises means "not loaded", with why
        raise HookError(f"cannot load {reference}: {type(exc).__name__}: {exc}") from exc
    return found


def method_name(event: HookEvent) -> str:
    """The method of a class hook handling `event`: `tool:before` is `on_tool_before`."""
    return "on_" + event.replace(":", "_")


def python_handler(target: object, declared: object) -> tuple[tuple[HookEvent, ...], Handler]:
    """The events and the one call of a Python hook: an async function `(payload, context)` with its events
    declared (`events` beside it, or the HOOK.md's), or a class whose async `on_<event>` methods are its handlers
    (made with no arguments, once)."""
    if inspect.isclass(target):
        try:
            instance: object = target()
        except Exception as exc:  # someone's constructor
            raise HookError(f"{target.__name__}() failed: {type(exc).__name__}: {exc}") from exc
        methods: dict[HookEvent, Any] = {e: getattr(instance, method_name(e), None) for e in EVENTS}
        handled: dict[HookEvent, Any] = {e: m for e, m in methods.items() if m is not None}
        if not handled:
            raise HookError(f"{target.__name__} has no handler: name methods on_<event>, e.g. on_tool_before")
        if sync := [method_name(e) for e, m in handled.items() if not inspect.iscoroutinefunction(m)]:
            raise HookError(f"{', '.join(sync)} must be async (a hook may not hold up the event loop)")

        async def by_method(event: HookEvent, payload: dict[str, Any], context: HookContext) -> object:
            return await handled[event](payload, context)

        return tuple(handled), by_method
    if not inspect.iscoroutinefunction(target):
        raise HookError("a Python hook is an async function (payload, context) or a class with on_<event> methods")
    function = cast(Callable[[dict[str, Any], HookContext], Awaitable[object]], target)

    async def by_function(event: HookEvent, payload: dict[str, Any], context: HookContext) -> object:
        return await function(payload, context)

    return _events(declared), by_function


def _events(value: object) -> tuple[HookEvent, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names:
        raise HookError("events is missing: a list such as [message:received, tool:before]")
    events = cast(list[object], names)
    if unknown := [str(e) for e in events if e not in EVENTS]:
        raise HookError(f"unknown event {unknown[0]!r}; events are: {', '.join(EVENTS)}")
    return tuple(dict.fromkeys(cast(list[HookEvent], events)))


def _command(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        argv = shlex.split(value)
    elif isinstance(value, list) and all(isinstance(part, str) for part in cast(list[object], value)):
        argv = cast(list[str], value)
    else:
        raise HookError("command must be a string or a list of strings")
    if not argv:
        raise HookError("command is empty")
    return tuple(argv)


def _timeout(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 600:
        raise HookError(f"timeout_s must be a number of seconds above 0, at most 600 (not {value!r})")
    return float(value)


def _on_error(value: object) -> OnError:
    if value not in ("allow", "deny"):
        raise HookError(f"on_error must be allow or deny (not {value!r})")
    return value


def _priority(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise HookError(f"priority must be a whole number, lower runs first (not {value!r})")
    return value
