"""The agent's Markdown as Telegram HTML: everything escaped first, then the small subset Telegram shows converted.

Escaping first means nothing the model writes can become markup by accident: `<`, `>` and `&` always arrive as
written, and `_*[]()~` stay literal unless they form one of the supported constructs (bold `**x**`, italics `*x*`
or `_x_` between non-word characters, strike `~~x~~`, inline code, fenced code with its language, and links to
http(s) URLs). A construct left open (a part cut by the splitter mid-sentence) is left as its characters.
"""

from __future__ import annotations

import html
import re

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
    out: list[str] = []
    position = 0
    for block in _FENCED.finditer(text):
        out.append(_inline(text[position : block.start()]))
        language = block.group(2).strip().split(maxsplit=1)
        code = html.escape(block.group(3), quote=False)
        if language:
            out.append(f'<pre><code class="language-{html.escape(language[0])}">{code}</code></pre>')
        else:
            out.append(f"<pre>{code}</pre>")
        position = block.end()
    out.append(_inline(text[position:]))
    return "".join(out)


def _inline(text: str) -> str:
    """Text outside code blocks: inline code and link targets kept verbatim, the rest escaped, then styled."""
    out: list[str] = []
    position = 0
    for found in _VERBATIM.finditer(text):
        out.append(_styled(text[position : found.start()]))
        if found["code"] is not None:
            out.append(f"<code>{html.escape(found['code'], quote=False)}</code>")
        else:
            out.append(f'<a href="{html.escape(found["url"])}">{_styled(found["label"])}</a>')
        position = found.end()
    out.append(_styled(text[position:]))
    return "".join(out)


def _styled(text: str) -> str:
    escaped = html.escape(text, quote=False)
    for pattern, replacement in _RULES:
        escaped = pattern.sub(replacement, escaped)
    return escaped
