"""`hermitcrab hooks`: every hook found, its events, where it comes from, whether it runs, and its last error."""

from __future__ import annotations

from typing import cast

import typer

from ..config import Settings, load_settings
from ..hooks.dispatch import Hooks, last_errors


def hooks() -> None:
    """List the hooks found (workspace hooks/, the home's hooks/, [hooks] extra_dirs, the bundled ones, entry points
    in the hermitcrab.hooks group), which run, the last error of each, and those that failed to load and why."""
    typer.echo(report(load_settings()))


def report(settings: Settings) -> str:
    found = Hooks.load(settings)
    running = {hook.name for hook in found.hooks}
    errors = last_errors(settings)
    lines = [f"Hooks ({len(running)} of {len(found.known)} on; switch them in config.toml [hooks]):"]
    for hook in sorted(found.known, key=lambda h: h.name):
        state = "on" if hook.name in running else "off"
        lines.append(f"- {hook.name}: {state} · {', '.join(hook.events)} · {hook.source}")
        error: object = errors.get(hook.name)
        if isinstance(error, dict):
            error = cast(dict[str, object], error)
            lines.append(f"  last error ({error.get('at')}, on {error.get('event')}): {error.get('error')}")
    if not found.known:
        lines.append("- none found")
    if found.broken:
        lines.append("Not loaded:")
        lines.extend(f"- {item.name}: {item.reason} ({item.source})" for item in found.broken)
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    app.command()(hooks)
