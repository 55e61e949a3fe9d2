"""How getopt-style programs read an option, so `--out=F`, `-ro F` and `-oF` are all seen as `-o`/`--output`."""

from __future__ import annotations


def option_use(text: str, option: str) -> str | None:
    """How the word `text` uses `option`: None if not at all, "" if its value is the next word, else the attached
    value. Long options may be abbreviated (`--out=F`), short ones clustered with others (`-ro F`, `-oF`)."""
    if option.startswith("--"):
        name, equals, value = text.partition("=")
        if len(name) > 2 and name.startswith("--") and option.startswith(name):
            return value if equals else ""
        return None
    if text.startswith("-") and not text.startswith("--") and option[1] in text[1:]:
        return text[text.index(option[1], 1) + 1 :]
    return None


def uses(texts: list[str | None], options: tuple[str, ...]) -> bool:
    """Whether any word uses one of `options` (a word computed at run time might)."""
    return any(t is None or any(option_use(t, o) is not None for o in options) for t in texts)
