"""The dashboard as one Starlette app: the pages of `pages/`, login and logout, the assets, behind `access.Access`."""

from __future__ import annotations

from pathlib import Path

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, request_response
from starlette.staticfiles import StaticFiles

from .access import Access
from .auth import COOKIE, SESSION_TTL_S, LoginLinks, Sessions
from .context import Context
from .pages import PAGES
from .render import Notices, page

STATIC = Path(__file__).parent / "static"


def create_app(context: Context, *, secure_cookie: bool = False) -> Starlette:
    """The dashboard of the host in `context`; `secure_cookie` when it is reached over TLS (behind a proxy)."""
    folder = context.settings.state / "dashboard"
    links, sessions = LoginLinks(folder), Sessions(folder)

    async def login(request: Request) -> Response:
        token = request.query_params.get("token")
        if token is None or not await anyio.to_thread.run_sync(links.redeem, token):
            problem = "That login link is used up or expired." if token is not None else None
            return page(request, "login.html", "Log in", status=401, problem=problem)
        # A page of our own rather than a redirect: a link opened from another site's page would carry the Strict
        # cookie set here on no step of a redirect chain begun there; this page's own move to Chat is same-site.
        first = PAGES[0]
        response = page(request, "login_done.html", "Logged in", to=first.PATH, name=first.TITLE)
        response.set_cookie(
            COOKIE,
            await anyio.to_thread.run_sync(sessions.open),
            max_age=int(SESSION_TTL_S),
            httponly=True,
            samesite="strict",
            secure=secure_cookie,
        )
        return response

    async def logout(request: Request) -> Response:
        await anyio.to_thread.run_sync(sessions.close, request.state.session)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    async def home(request: Request) -> Response:
        return RedirectResponse(PAGES[0].PATH, status_code=303)

    routes: list[BaseRoute] = [
        Route("/", home),
        Route("/login", login),
        Route("/logout", logout, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    for module in PAGES:
        routes.extend(module.routes)
    app = Starlette(routes=routes)
    app.state.context = context
    app.state.notices = Notices()
    app.state.nav = [(module.TITLE, module.PATH) for module in PAGES]
    app.add_middleware(
        Access,
        sessions=sessions,
        hosts=(*context.settings.dashboard.hosts, context.settings.dashboard.host),  # 127.0.0.2 answers to its name
        login_page=request_response(login),
    )
    return app
