"""The agent's Markdown as Telegram HTML: everything escaped first, then the small subset Telegram shows converted.

Escaping first means nothing the model writes can become markup by accident: `<`, `>` and `&` always arrive as
written, and `_*[]()~` stay literal unless they form one of the supported constructs (bold `**x**`, italics `*x*`
or `_x_` between non-word characters, strike `~~x~~`, inline code, fenced code with its language, and links to
http(s) URLs). A construct left open (a part cut by the splitter mid-sentence) is left as its characters.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n`]*)\n(.*?)\n[ \t]*\1[ \t]*$", re.DOTALL | re.MULTILINE)
_VERBATIM = re.compile(
    r"(?P<ticks>`+)(?P<code>.+?)(?P=ticks)|\[(?P<label>[^\[\]\n]+)\]\((?P<url>https?://[^\s()<>\"]+)\)"
)
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\*\*(?=\S)([^<]+?)(?<=\S)\*\*"), r"<b>\1</b>"),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n<]+?)(?<=[^\s*])\*(?![\w*])"), r"<i>\1</i>"),
    (re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n<]+?)(?<=[^\s_])_(?![\w_])"), r"<i>\1</i>"),
    (re.compile(r"~~(?=\S)([^<]+?)(?<=\S)~~"), r"<s>\1</s>"),
)
"""Applied in turn to escaped text, where every `<` starts a tag put in by an earlier rule: a span may not hold
one, so a later style can nest inside an earlier one but never cross it (`**a *b** c*` keeps its second pair)."""


def to_html(text: str) -> str:
    """`text` (Markdown) as the body of a message sent with `parse_mode=HTML`."""
    return _around(_FENCED, text, _inline, _block)


def _block(block: re.Match[str]) -> str:
    language = block.group(2).strip().split(maxsplit=1)
    code = html.escape(block.group(3), quote=False)
    if not language:
        return f"<pre>{code}</pre>"
    return f'<pre><code class="language-{html.escape(language[0])}">{code}</code></pre>'


def _inline(text: str) -> str:
    """Text outside code blocks: inline code and link targets kept verbatim, the rest escaped, then styled."""
    return _around(_VERBATIM, text, _styled, _verbatim)


def _verbatim(found: re.Match[str]) -> str:
    if found["code"] is not None:
        return f"<code>{html.escape(found['code'], quote=False)}</code>"
    return f'<a href="{html.escape(found["url"])}">{_styled(found["label"])}</a>'


def _around(
    pattern: re.Pattern[str], text: str, outside: Callable[[str], str], inside: Callable[[re.Match[str]], str]
) -> str:
    """`text` with each match of `pattern` made by `inside` and the text between matches by `outside`."""
    out: list[str] = []
    position = 0
    for found in pattern.finditer(text):
        out += [outside(text[position : found.start()]), inside(found)]
        position = found.end()
    out.append(outside(text[position:]))
    return "".join(out)


def _styled(text: str) -> str:
    escaped = html.escape(text, quote=False)
    for pattern, replacement in _RULES:
        escaped = pattern.sub(replacement, escaped)
    return escaped
