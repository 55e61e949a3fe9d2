"""Tools that act on elements by ref: click, type, keys, hover, select, forms, drag, uploads, dialogs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, Field

from hermitcrab.servers._common.arguments import MAX_PATH_CHARS, quote, shorten
from hermitcrab.servers._common.paths import PathOutsideRoots, resolve_inside

from .config import UPLOADS
from .limits import (
    MAX_ELEMENT_CHARS,
    MAX_FIELDS,
    MAX_FUNCTION_CHARS,
    MAX_KEY_CHARS,
    MAX_REF_CHARS,
    MAX_SLOW_TEXT_CHARS,
    MAX_TEXT_CHARS,
    MAX_UPLOADS,
    MAX_VALUES,
)
from .runner import Outcome, Runner, is_closed
from .tab import Tab

Element = Annotated[
    str | None,
    Field(
        description="Human-readable description of the element (e.g. 'Sign in button'), used in messages.",
        max_length=MAX_ELEMENT_CHARS,
    ),
]
Ref = Annotated[
    str, Field(description="The element's ref from the latest snapshot, e.g. e12 or f1e3.", max_length=MAX_REF_CHARS)
]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Modifier = Literal["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]
_MAX_RESULT_CHARS = 20_000
_MAX_THROWN_CHARS = 1_000


class FormField(BaseModel):
    name: str = Field(description="Human-readable field name.", max_length=MAX_ELEMENT_CHARS)
    type: Literal["textbox", "checkbox", "radio", "combobox", "slider"] = Field(description="The field's kind.")
    ref: str = Field(description="The field's ref from the latest snapshot.", max_length=MAX_REF_CHARS)
    value: str = Field(
        description="Text for a textbox, 'true'/'false' for a checkbox or radio, an option label for a combobox.",
        max_length=MAX_TEXT_CHARS,
    )


def _label(element: str | None, ref: str) -> str:
    return f"{shorten(element)} ({ref})" if element else ref


def register(server: MCPServer, runner: Runner) -> None:
    session = runner.session
    config = session.config

    @server.tool()
    async def browser_click(
        ref: Ref,
        element: Element = None,
        doubleClick: Annotated[bool, Field(description="Double-click instead of a single click.")] = False,
        button: Annotated[Literal["left", "right", "middle"], Field(description="Mouse button.")] = "left",
        modifiers: Annotated[list[Modifier] | None, Field(description="Keys held during the click.")] = None,
    ) -> CallToolResult:
        """Click an element (by ref) and return what changed on the page."""

        async def click(tab: Tab) -> str:
            target = tab.locator(ref, element)
            if doubleClick:
                await target.dblclick(button=button, modifiers=modifiers or [])
            else:
                await target.click(button=button, modifiers=modifiers or [])
            return f"{'Double-clicked' if doubleClick else 'Clicked'} {_label(element, ref)}"

        return await runner.act(click)

    @server.tool()
    async def browser_type(
        ref: Ref,
        text: Annotated[
            str, Field(description="The text to enter (replaces what the field holds).", max_length=MAX_TEXT_CHARS)
        ],
        element: Element = None,
        submit: Annotated[bool, Field(description="Press Enter afterwards (submits most forms).")] = False,
        slowly: Annotated[
            bool, Field(description="Type one key at a time, for pages that react to each keystroke.")
        ] = False,
    ) -> CallToolResult:
        """Type text into an editable element (by ref), optionally pressing Enter after it."""
        if slowly and len(text) > MAX_SLOW_TEXT_CHARS:
            raise ToolError(
                f"`text` is too long to type slowly ({len(text):,} characters; the limit is {MAX_SLOW_TEXT_CHARS:,}): "
                "call without slowly, or type it in parts."
            )

        async def type_text(tab: Tab) -> str:
            target = tab.locator(ref, element)
            if slowly:
                await target.press_sequentially(text)
            else:
                await target.fill(text)
            if submit:
                await target.press("Enter")
            return f"Typed {len(text)} characters into {_label(element, ref)}{' and pressed Enter' if submit else ''}"

        return await runner.act(type_text)

    @server.tool()
    async def browser_press_key(
        key: Annotated[
            str,
            Field(
                description="A key name such as Enter, Escape, ArrowDown, Tab, or a character like a.",
                max_length=MAX_KEY_CHARS,
            ),
        ],
    ) -> CallToolResult:
        """Press a key on the keyboard in the current tab (goes to the focused element)."""

        async def press(tab: Tab) -> str:
            try:
                await tab.page.keyboard.press(key)
            except PlaywrightError as exc:
                if not exc.message.startswith("Keyboard.press: Unknown key"):
                    raise
                raise ToolError(
                    f"`key` {quote(key)} is not a key name: use one such as Enter, Escape, ArrowDown, Tab, "
                    "Control+a, or a single character."
                ) from exc
            return f"Pressed {key}"

        return await runner.act(press)

    @server.tool()
    async def browser_hover(ref: Ref, element: Element = None) -> CallToolResult:
        """Move the mouse over an element (by ref), e.g. to open a hover menu."""

        async def hover(tab: Tab) -> str:
            await tab.locator(ref, element).hover()
            return f"Hovered over {_label(element, ref)}"

        return await runner.act(hover)

    @server.tool()
    async def browser_select_option(
        ref: Ref,
        values: Annotated[
            list[Text],
            Field(description="Option labels or values to select (several for a multi-select).", max_length=MAX_VALUES),
        ],
        element: Element = None,
    ) -> CallToolResult:
        """Select options in a dropdown (combobox or listbox) by ref."""

        async def select(tab: Tab) -> str:
            chosen = await tab.locator(ref, element).select_option(values)
            return f"Selected {shorten(', '.join(chosen)) or 'nothing'} in {_label(element, ref)}"

        return await runner.act(select)

    @server.tool()
    async def browser_fill_form(
        fields: Annotated[
            list[FormField],
            Field(description="The fields to fill, each with its ref and value.", max_length=MAX_FIELDS),
        ],
    ) -> CallToolResult:
        """Fill several form fields in one call: textboxes, checkboxes, radios, dropdowns and sliders."""

        async def fill(tab: Tab) -> str:
            for item in fields:
                target = tab.locator(item.ref, item.name)
                if item.type in ("checkbox", "radio"):
                    await target.set_checked(item.value.strip().lower() in ("true", "yes", "on", "1", "checked"))
                elif item.type == "combobox":
                    await target.select_option(item.value)
                else:
                    await target.fill(item.value)
            return f"Filled {len(fields)} fields: {shorten(', '.join(item.name for item in fields))}"

        return await runner.act(fill)

    @server.tool()
    async def browser_drag(
        startRef: Annotated[str, Field(description="Ref of the element to drag.", max_length=MAX_REF_CHARS)],
        endRef: Annotated[str, Field(description="Ref of the element to drop onto.", max_length=MAX_REF_CHARS)],
        startElement: Element = None,
        endElement: Element = None,
    ) -> CallToolResult:
        """Drag one element (by ref) and drop it onto another."""

        async def drag(tab: Tab) -> str:
            await tab.locator(startRef, startElement).drag_to(tab.locator(endRef, endElement))
            return f"Dragged {_label(startElement, startRef)} onto {_label(endElement, endRef)}"

        return await runner.act(drag)

    @server.tool()
    async def browser_file_upload(
        paths: Annotated[
            list[Annotated[str, Field(max_length=MAX_PATH_CHARS)]] | None,
            Field(
                description="Files to upload, absolute or relative to the first upload root. Omit to cancel.",
                max_length=MAX_UPLOADS,
            ),
        ] = None,
        ref: Annotated[
            str | None,
            Field(
                description="Ref of a file input to fill directly, when no file chooser is open.",
                max_length=MAX_REF_CHARS,
            ),
        ] = None,
        element: Element = None,
    ) -> CallToolResult:
        """Upload files into the open file chooser (opened by clicking an upload button) or into a file input by ref.

        Only files inside the server's upload roots can be sent.
        """
        files = [_upload_file(path, config.roots) for path in paths or []]

        async def upload(tab: Tab) -> str:
            chooser = tab.chooser
            tab.chooser = None
            if chooser is not None:
                if files:
                    await chooser.set_files(files)
                return f"Uploaded {len(files)} file(s)" if files else "Closed the file chooser without files"
            if ref is None:
                raise ToolError("No file chooser is open: click the upload button first, or pass the file input's ref.")
            await tab.locator(ref, element).set_input_files(files)
            return f"Set {len(files)} file(s) on {_label(element, ref)}"

        return await runner.act(upload, modal_ok=True)

    @server.tool()
    async def browser_handle_dialog(
        accept: Annotated[bool, Field(description="true to accept (OK), false to dismiss (Cancel).")],
        promptText: Annotated[
            str | None, Field(description="Text to enter in a prompt() dialog.", max_length=MAX_TEXT_CHARS)
        ] = None,
    ) -> CallToolResult:
        """Answer the JavaScript alert, confirm or prompt dialog that is open in the current tab."""

        async def answer(tab: Tab) -> str:
            dialog = tab.dialog
            if dialog is None:
                raise ToolError("No dialog is open in the current tab, so there is nothing to answer: go on.")
            tab.dialog = None
            if accept:
                await dialog.accept(promptText) if promptText is not None else await dialog.accept()
            else:
                await dialog.dismiss()
            await tab.unblocked(config.action_timeout_ms / 1000)
            return f"{'Accepted' if accept else 'Dismissed'} the {dialog.type} dialog"

        return await runner.act(answer, modal_ok=True)

    if config.enable_evaluate:

        @server.tool()
        async def browser_evaluate(
            function: Annotated[
                str,
                Field(
                    description="A JavaScript function: '() => document.title', or '(element) => element.value'.",
                    max_length=MAX_FUNCTION_CHARS,
                ),
            ],
            ref: Annotated[
                str | None, Field(description="Ref of an element passed to the function.", max_length=MAX_REF_CHARS)
            ] = None,
            element: Element = None,
        ) -> CallToolResult:
            """Run JavaScript in the current page (or on one element) and return its JSON result."""

            async def evaluate(tab: Tab) -> Outcome:
                target = tab.locator(ref, element) if ref else tab.page
                try:
                    value = await target.evaluate(function)
                except PlaywrightError as exc:
                    if is_closed(exc):
                        raise
                    # The page chose the error text, so it goes inside the untrusted fence.
                    thrown = shorten(exc.message.splitlines()[0], _MAX_THROWN_CHARS)
                    return Outcome("The function threw an error", page=[f"- Error: {thrown}"])
                shown = json.dumps(value, ensure_ascii=False, default=str)
                if len(shown) > _MAX_RESULT_CHARS:
                    shown = shown[:_MAX_RESULT_CHARS] + "… [truncated]"
                return Outcome("Evaluated the function", page=[f"- Result: {shown}"])

            return await runner.act(evaluate)


def _upload_file(path: str, roots: tuple[Path, ...]) -> Path:
    if not roots:
        raise ToolError("File uploads are off: the server needs --root DIR to know which files it may send.")
    try:
        resolved = resolve_inside(path, roots)
    except PathOutsideRoots as exc:
        raise ToolError(f"{exc}; upload a file from inside the roots.") from exc
    if not resolved.is_file():
        raise ToolError(f"{quote(path)} is not a file inside the upload roots; check the name.")
    _refuse_workspace_files(path, resolved)
    return resolved


def _refuse_workspace_files(path: str, resolved: Path) -> None:
    """Never send a page the persona or memory files: inside a hermitcrab workspace (a folder holding MEMORY.md),
    only its uploads/ folder may be uploaded from, even when an upload root is the whole workspace (an older init)."""
    for folder in resolved.parents:
        if folder.name == UPLOADS and (folder.parent / "MEMORY.md").is_file():
            return
        if (folder / "MEMORY.md").is_file():
            raise ToolError(
                f"{quote(path)} is in the hermitcrab workspace {folder}, whose persona and memory files are never "
                f"uploaded; only files in {folder / UPLOADS} are: copy the file there first."
            )
