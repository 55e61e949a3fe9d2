"""Session-end capture: on `/new` and `/reset`, the last messages are saved where the memory server finds them.

The file is `memory/YYYY-MM-DD-<slug>.md` in the workspace, the slug taken from the words of the conversation (no
model call), written atomically and never over another file.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from hermitcrab.util.files import atomic_write_text

from ..text import cut_middle
from .transcript import Session

LAST_MESSAGES = 15
MAX_MESSAGE_CHARS = 2_000
SLUG_WORDS = 4
_COMMON_WORDS = """
a an and are as at be but by can could did do does for from had has have hello hi how i if in into is it its
just let me my no not of on or our please so that the their them then there these they this to up us was we were
what when where which who why will with would you your yes ok okay thanks thank
"""
STOPWORDS = frozenset(_COMMON_WORDS.split())


def capture(session: Session, folder: Path, now: dt.datetime) -> Path | None:
    """Write the session's last user and assistant messages to a dated memory file in `folder` (`memory/`, or
    `memory/others/` for what others said, which the memory server keeps marked as theirs); None when there are
    none."""
    view = session.transcript.view()
    said = [e for e in view.live if e.get("kind") in ("user", "assistant") and str(e.get("text", "")).strip()]
    said = said[-LAST_MESSAGES:]
    if not said:
        return None
    lines = [f"# Conversation {now:%Y-%m-%d %H:%M} ({session.key}, session {session.id})", ""]
    if view.summary and len(said) < LAST_MESSAGES:
        lines += ["## Earlier, as summarised", "", view.summary, "", "## Last messages", ""]
    for entry in said:
        text = cut_middle(str(entry["text"]).strip(), MAX_MESSAGE_CHARS, "cut when the session ended")
        lines.append(f"**{entry['kind']}** ({str(entry.get('ts', ''))[:16].replace('T', ' ')}): {text}")
        lines.append("")
    folder.mkdir(parents=True, exist_ok=True)
    path = _free_name(folder, f"{now:%Y-%m-%d}-{slug(' '.join(str(e['text']) for e in said if e['kind'] == 'user'))}")
    atomic_write_text(path, "\n".join(lines))
    return path


def slug(text: str) -> str:
    """A few telling words of `text`, lowercase and hyphenated: `fix-nginx-config-staging`."""
    words = [w for w in re.findall(r"[^\W_]+", text.lower()) if w not in STOPWORDS and len(w) > 1]
    return "-".join(list(dict.fromkeys(words))[:SLUG_WORDS])[:48].strip("-") or "session"


def _free_name(folder: Path, stem: str) -> Path:
    path = folder / f"{stem}.md"
    number = 2
    while path.exists():
        path = folder / f"{stem}-{number}.md"
        number += 1
    return path
