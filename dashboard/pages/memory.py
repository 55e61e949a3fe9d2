"""The Memory page: the memory files as a tree, one file shown with its line numbers and edited in a textarea, and
search with the memory server's own `memory_search` (its results, their files and lines, each a link to them).

Files are read and saved on disk (`memory_files.py`); the memory server's watcher re-indexes a saved file within
about a second, and every search catches up with the files first, so a search right after a save finds the new text.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlencode

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from .. import memory_files
from ..access import MAX_FORM_BYTES
from ..context import context
from ..numbers import whole_number
from ..render import done, page
from ..tools import Unavailable, server_with

TITLE = "Memory"
PATH = "/memory"
MAX_RESULTS = 20
MAX_QUERY_CHARS = 2000
SHOWN_LINES = 1000  # a window of a longer file, with links to the lines before and after it
REINDEX_NOTE = "the memory server re-indexes it within about a second, and every search catches up first"


class Hit(BaseModel):
    """One `memory_search` result, as far as this page reads it."""

    model_config = ConfigDict(extra="ignore")
    path: str
    start_line: int
    end_line: int
    score: float = 0.0
    snippet: str = ""
    untrusted: bool = False

    @property
    def link(self) -> str | None:
        """The file view at these lines, for a file in the workspace's memory (an extra path is not shown here)."""
        if not memory_files.is_memory_path(self.path):
            return None
        return file_url(self.path, self.start_line, self.end_line)


def file_url(rel: str, line: int | None = None, to: int | None = None) -> str:
    query: dict[str, str | int] = {"path": rel}
    if line is not None:
        query["line"] = line
        query["to"] = to or line
    return f"{PATH}/file?{urlencode(query)}" + (f"#L{line}" if line is not None else "")


async def show(request: Request) -> Response:
    found = context(request)
    query = request.query_params.get("q", "").strip()
    evergreen, folder = await anyio.to_thread.run_sync(memory_files.tree, found.settings.workspace)
    values: dict[str, Any] = {
        "query": query,
        "evergreen": evergreen,
        "folder": folder,
        "file_url": file_url,
    }
    try:
        memory = server_with(found, "memory_search", "memory")
        values["index"] = await memory.call("memory_status", {})
        if query:
            values["hits"] = _hits(await memory.call("memory_search", _search(query)))
    except Unavailable as exc:
        values["problem"] = str(exc)
    return page(request, "memory.html", TITLE, **values)


def _search(query: str) -> dict[str, Any]:
    return {"query": query[:MAX_QUERY_CHARS], "max_results": MAX_RESULTS}


def _hits(answer: dict[str, Any]) -> list[Hit]:
    results = answer.get("results")
    if not isinstance(results, list):
        raise Unavailable("The memory server's search answer has no list of results.")
    try:
        return [Hit.model_validate(item) for item in cast(list[object], results)]
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise Unavailable(f"The memory server's search results are not as expected: {problem}.") from None


async def view(request: Request) -> Response:
    rel = request.query_params.get("path", "")
    try:
        file = await anyio.to_thread.run_sync(memory_files.read, context(request).settings.workspace, rel)
    except memory_files.Refused as exc:
        return page(request, "memory_file.html", TITLE, status=400, rel=rel, problem=str(exc))
    lines = file.text.splitlines()
    first = whole_number(request.query_params.get("line"), 1)
    last = max(first, whole_number(request.query_params.get("to"), first))
    latest = max(1, len(lines) - SHOWN_LINES + 1)  # the start of the last window
    start = max(1, min(whole_number(request.query_params.get("from"), first - 20), latest))
    window = lines[start - 1 : start - 1 + SHOWN_LINES]
    return page(
        request,
        "memory_file.html",
        TITLE,
        rel=rel,
        file=file,
        numbered=list(enumerate(window, start)),
        marked=(first, last) if "line" in request.query_params else None,
        total=len(lines),
        earlier=_window_url(rel, max(1, start - SHOWN_LINES)) if start > 1 else None,
        later=_window_url(rel, start + SHOWN_LINES) if start + SHOWN_LINES <= len(lines) else None,
        edit_url=f"{PATH}/edit?{urlencode({'path': rel})}",
        why_not=None if file.editable else memory_files.why_not_editable(file),
    )


def _window_url(rel: str, start: int) -> str:
    """The file view's lines from `start` on, none marked."""
    return f"{PATH}/file?{urlencode({'path': rel, 'from': start})}"


async def edit(request: Request) -> Response:
    rel = request.query_params.get("path", "")
    try:
        file = await anyio.to_thread.run_sync(memory_files.read, context(request).settings.workspace, rel)
    except memory_files.Refused as exc:
        return _edit_page(request, status=400, rel=rel, problem=str(exc))
    if not file.editable:
        problem = f"{rel} cannot be edited here: {memory_files.why_not_editable(file)}"
        return _edit_page(request, status=400, rel=rel, problem=problem)
    return _edit_page(request, rel=rel, text=file.text, opened=file.digest)


def _edit_page(request: Request, status: int = 200, **values: Any) -> Response:
    return page(request, "memory_edit.html", TITLE, status, max_chars=memory_files.MAX_EDIT_BYTES, **values)


async def save(request: Request) -> Response:
    form = await request.form(max_part_size=MAX_FORM_BYTES)  # the door's limit, not Starlette's 1 MB per field
    rel, text, opened = (str(form.get(name, "")) for name in ("path", "text", "opened"))
    workspace = context(request).settings.workspace
    try:
        await anyio.to_thread.run_sync(memory_files.save, workspace, rel, text, opened)
    except memory_files.Changed as changed:
        problem = (
            f"{rel} changed since you opened it (the agent may have written to it), so your text was not saved. "
            "It is below, with what the file holds now: merge them and save again."
        )
        current = changed.current
        return _edit_page(
            request,
            status=409,
            rel=rel,
            text=text,
            opened=current.digest,
            current=current.text,
            problem=problem,
        )
    except memory_files.Refused as exc:
        return _edit_page(request, status=400, rel=rel, text=text, opened=opened, problem=str(exc))
    return done(request, file_url(rel), f"Saved {rel}: {REINDEX_NOTE}.")


routes: list[BaseRoute] = [
    Route(PATH, show),
    Route(f"{PATH}/file", view),
    Route(f"{PATH}/edit", edit),
    Route(f"{PATH}/edit", save, methods=["POST"]),
]
