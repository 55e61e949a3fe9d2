"""Turn Playwright's AI-mode aria snapshot into the compact text the model reads.

Playwright (`page.aria_snapshot(mode="ai")`) already gives every element a ref (`[ref=e12]`,
`[ref=f1e3]` inside iframes) that `page.locator("aria-ref=e12")` resolves. It also gives refs to
every wrapper div, repeats label text next to the field it names and spells out every option.
We keep Playwright's refs (so resolution stays Playwright's job) and cut the rest:

- refs stay only on elements the model can act on (interactive roles, anything with a pointer cursor);
- unnamed `generic`/`rowgroup`/`none` wrappers disappear and their children move up;
- text that merely repeats a neighbour's or parent's name is dropped, a lone text child is inlined;
- a list item or cell around a single element gives way to it;
- link URLs become `[url=...]` without `#`/`javascript:` targets or long tails; option lists are capped;
- compact mode keeps only actionable elements, headings and alerts.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

INTERACTIVE_ROLES = frozenset(
    {
        "button",
        "link",
        "textbox",
        "searchbox",
        "checkbox",
        "radio",
        "combobox",
        "listbox",
        "option",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "tab",
        "switch",
        "slider",
        "spinbutton",
        "treeitem",
        "gridcell",
        "scrollbar",
    }
)
# Roles whose node carries no meaning when it has no name: its children take its place.
_WRAPPER_ROLES = frozenset({"generic", "rowgroup", "none", "presentation", "group", "LayoutTable"})
# Kept in compact mode besides actionable elements: orientation and messages the model must see.
_NOTICE_ROLES = frozenset({"heading", "alert", "alertdialog", "dialog", "status", "iframe"})
# A cell or list item around a single element is replaced by that element.
_CELL_ROLES = frozenset({"listitem", "cell", "gridcell", "columnheader", "rowheader"})
# Roles whose name is computed from their text, so inline text beside a name adds nothing.
_LABELLED_BY_CONTENT = frozenset({"button", "link", "menuitem", "tab", "treeitem", "option"})
_MAX_OPTIONS = 25
_MAX_URL = 120


@dataclass
class Node:
    role: str
    name: str | None = None
    attrs: list[str] = field(default_factory=list[str])
    ref: str | None = None
    pointer: bool = False
    active: bool = False
    value: str | None = None
    children: list[Node] = field(default_factory=list["Node"])
    # url= and placeholder=, shown after the ref because they can be long.
    props: list[str] = field(default_factory=list[str])

    @property
    def actionable(self) -> bool:
        return self.ref is not None and (
            self.role in INTERACTIVE_ROLES or self.pointer or (self.role == "generic" and bool(self.name))
        )

    def text(self) -> str:
        """The node's own words: its name, else its inline value (used to spot repeats)."""
        return self.name or _unquote(self.value or "")


@dataclass(frozen=True)
class Snapshot:
    """A rendered snapshot and the refs it shows (the only refs an action may use)."""

    text: str
    refs: frozenset[str]


def render(raw: str, *, compact: bool = False, base_url: str = "") -> Snapshot:
    """Parse Playwright's AI snapshot and render our smaller version of it."""
    roots = _simplify(parse(raw), base_url)
    if compact:
        roots = _compact(roots)
    lines: list[str] = []
    refs: set[str] = set()
    for node in roots:
        _render(node, 0, lines, refs)
    return Snapshot("\n".join(lines), frozenset(refs))


def cap(text: str, max_chars: int) -> str:
    """Cut `text` at a line boundary so it fits `max_chars`, with a marker saying what is missing."""
    if len(text) <= max_chars:
        return text
    kept: list[str] = []
    size = 0
    lines = text.split("\n")
    for line in lines:
        if size + len(line) + 1 > max_chars - 200:
            break
        kept.append(line)
        size += len(line) + 1
    hidden = len(lines) - len(kept)
    kept.append(
        f"- [truncated: {hidden} more lines ({len(text) - size} chars) not shown; "
        "call browser_snapshot with compact=true for a smaller view]"
    )
    return "\n".join(kept)


def diff(old: str, new: str) -> str | None:
    """A unified diff of two snapshots, or None when the full snapshot would be about as short."""
    if old == new:
        return ""
    hunks = difflib.unified_diff(old.split("\n"), new.split("\n"), lineterm="", n=1)
    body = [line if not line.startswith("@@") else "@@" for line in hunks][2:]
    text = "\n".join(body)
    return text if len(text) < len(new) * 0.5 else None


# --- parsing -------------------------------------------------------------------------------


def parse(raw: str) -> list[Node]:
    """Build a tree from the indented `- role "name" [attr]: value` lines."""
    roots: list[Node] = []
    stack: list[tuple[int, Node]] = []
    for line in raw.split("\n"):
        stripped = line.lstrip(" ")
        if not stripped.startswith("- "):
            continue
        indent = len(line) - len(stripped)
        node = _parse_line(stripped[2:])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        (stack[-1][1].children if stack else roots).append(node)
        stack.append((indent, node))
    return roots


def _parse_line(entry: str) -> Node:
    if entry.startswith("'"):
        key, rest = _split_single_quoted(entry)
    else:
        key, rest = _split_key(entry)
    node = _parse_key(key)
    if rest.startswith(":"):
        value = rest[1:].strip()
        node.value = value or None
    return node


def _split_single_quoted(entry: str) -> tuple[str, str]:
    """`'button "a: b" [ref=e2]': value` -> the unescaped key and what follows it."""
    index = 1
    while index < len(entry):
        if entry[index] == "'":
            if entry[index + 1 : index + 2] == "'":
                index += 2
                continue
            return entry[1:index].replace("''", "'"), entry[index + 1 :]
        index += 1
    return entry, ""


def _split_key(entry: str) -> tuple[str, str]:
    """Split at the first `:` that is not inside the double-quoted name."""
    index = 0
    while index < len(entry):
        char = entry[index]
        if char == '"':
            index += _closing_quote(entry[index:])
        elif char == "\\":
            index += 1
        elif char == ":":
            return entry[:index], entry[index:]
        index += 1
    return entry, ""


def _parse_key(key: str) -> Node:
    role, _, rest = key.partition(" ")
    node = Node(role=role)
    rest = rest.strip()
    if rest.startswith('"'):
        end = _closing_quote(rest)
        node.name = _unquote(rest[: end + 1])
        rest = rest[end + 1 :].strip()
    for attr in re.findall(r"\[([^\]]*)\]", rest):
        if attr.startswith("ref="):
            node.ref = attr[4:]
        elif attr == "cursor=pointer":
            node.pointer = True
        elif attr == "active":
            node.active = True
        else:
            node.attrs.append(attr)
    return node


def _closing_quote(text: str) -> int:
    escaped = False
    for index in range(1, len(text)):
        char = text[index]
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return index
    return len(text) - 1


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value[1:-1]
        return decoded if isinstance(decoded, str) else value
    return value


# --- simplifying ---------------------------------------------------------------------------


def _simplify(nodes: list[Node], base_url: str) -> list[Node]:
    """Apply the size rules from the module docstring, bottom-up."""
    out: list[Node] = []
    for node in nodes:
        node.children = _simplify(node.children, base_url)
        if not node.actionable:
            node.ref = None
            node.active = False
        _inline_properties(node, base_url)
        if node.role == "img" and not node.name and node.ref is None and not node.children:
            continue
        if node.role in _WRAPPER_ROLES and not node.name and node.ref is None:
            if node.value:
                out.append(Node(role="text", value=node.value))
            out.extend(node.children)
            continue
        if _holds_one_element(node):
            out.append(node.children[0])
            continue
        if node.name and node.value and node.role in _LABELLED_BY_CONTENT:
            node.value = None  # the name already says it; the text is an icon glyph or a repeat
        out.append(node)
    out = _merge_texts(_drop_repeats(out))
    for node in out:
        _inline_lone_text(node)
        if node.role in ("combobox", "listbox"):
            node.children = _cap_options(node.children)
    return out


def _inline_properties(node: Node, base_url: str) -> None:
    """Fold `/url:` and `/placeholder:` children into `[url=...]` and `[placeholder=...]` on the element."""
    kept: list[Node] = []
    for child in node.children:
        if child.role == "/url":
            url = _short_url(_unquote(child.value or ""), base_url)
            if url:
                node.props.append(f"url={url}")
        elif child.role == "/placeholder":
            placeholder = _unquote(child.value or "")
            if placeholder and placeholder != node.name:
                node.props.append(f"placeholder={placeholder}")
        else:
            kept.append(child)
    node.children = kept


def _holds_one_element(node: Node) -> bool:
    """A list item or cell that only wraps one link, button or field (and says nothing of its own)."""
    return (
        node.role in _CELL_ROLES
        and node.ref is None
        and not node.value
        and len(node.children) == 1
        and node.name in (None, node.children[0].name)
    )


def _drop_repeats(siblings: list[Node]) -> list[Node]:
    """Drop `text: X` next to a sibling named X (label text beside its field, caption beside a checkbox)."""
    named = {node.name for node in siblings if node.name}
    return [node for node in siblings if not (node.role == "text" and _unquote(node.value or "") in named)]


def _merge_texts(siblings: list[Node]) -> list[Node]:
    """Join runs of plain text siblings into one line, as Playwright's default mode does."""
    out: list[Node] = []
    for node in siblings:
        previous = out[-1] if out else None
        if node.role == "text" and previous is not None and previous.role == "text" and not previous.children:
            previous.value = f"{_unquote(previous.value or '')} {_unquote(node.value or '')}"
            continue
        out.append(node)
    return out


def _inline_lone_text(node: Node) -> None:
    children = [child for child in node.children if not (child.role == "text" and child.text() == node.name)]
    if len(children) == 1 and children[0].role == "text" and not node.value and not children[0].children:
        node.value = children[0].value
        children = []
    node.children = children


def _cap_options(options: list[Node]) -> list[Node]:
    if len(options) <= _MAX_OPTIONS:
        return options
    kept = [node for index, node in enumerate(options) if index < _MAX_OPTIONS or "selected" in node.attrs]
    hidden = len(options) - len(kept)
    marker = f"[{hidden} more options; pick one by its label with browser_select_option]"
    return [*kept, Node(role="text", value=marker)]


def _short_url(url: str, base_url: str) -> str:
    if not url or url.startswith(("#", "javascript:")):
        return ""
    if base_url:
        base = urlsplit(base_url)
        origin = f"{base.scheme}://{base.netloc}"
        if url.startswith(origin + "/"):
            url = url[len(origin) :]
    return url if len(url) <= _MAX_URL else url[: _MAX_URL - 1] + "…"


def _compact(nodes: list[Node]) -> list[Node]:
    """Keep actionable elements, headings and notices; everything else hands its kept descendants up."""
    out: list[Node] = []
    for node in nodes:
        kept_children = _compact(node.children)
        if node.actionable or node.role in _NOTICE_ROLES:
            node.props = [prop for prop in node.props if not prop.startswith("url=")]
            if node.role in ("combobox", "listbox"):
                kept_children = [child for child in node.children if "selected" in child.attrs] or kept_children
            node.children = kept_children
            out.append(node)
        else:
            out.extend(kept_children)
    return out


# --- rendering -----------------------------------------------------------------------------


def _render(node: Node, depth: int, lines: list[str], refs: set[str]) -> None:
    parts = [node.role]
    if node.name:
        parts.append(json.dumps(node.name, ensure_ascii=False))
    parts.extend(f"[{attr}]" for attr in node.attrs)
    if node.active:
        parts.append("[active]")
    if node.ref:
        parts.append(f"[ref={node.ref}]")
        refs.add(node.ref)
    parts.extend(f"[{prop}]" for prop in node.props)
    line = "  " * depth + "- " + " ".join(parts)
    if node.value:
        line += ": " + node.value
    elif node.children:
        line += ":"
    lines.append(line)
    for child in node.children:
        _render(child, depth + 1, lines, refs)
