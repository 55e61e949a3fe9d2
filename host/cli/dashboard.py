"""`hermitcrab dashboard`: a one-time login link to the dashboard `hermitcrab run` serves."""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer

from hermitcrab.dashboard.serve import login_url, serving_url

from ..config import load_settings


def dashboard(
    open_browser: Annotated[bool, typer.Option("--open", help="Open the link in this machine's browser too.")] = False,
) -> None:
    """Print a login link to the dashboard: it works once, for ten minutes, and logs this browser in for a month.

    The dashboard is served by `hermitcrab run` (on 127.0.0.1:8790 unless [dashboard] listen says otherwise); a link
    minted while it is not running works once it is.
    """
    settings = load_settings()
    if not settings.dashboard.enabled:
        raise typer.BadParameter("the dashboard is off: set [dashboard] enabled = true in config.toml")
    url = login_url(settings)
    typer.echo(url)
    if serving_url(settings) is None:
        typer.echo("note: no `hermitcrab run` serves the dashboard now; the link works once one does", err=True)
    if open_browser:
        webbrowser.open(url)


def register(app: typer.Typer) -> None:
    app.command()(dashboard)
