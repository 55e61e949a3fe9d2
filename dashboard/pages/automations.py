"""The Automations page (being built)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..render import page

TITLE = "Automations"
PATH = "/automations"


async def show(request: Request) -> Response:
    return page(request, "automations.html", TITLE)


routes: list[BaseRoute] = [Route(PATH, show)]
