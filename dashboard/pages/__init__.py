"""The dashboard's pages, in the order the navigation shows them; each module has `TITLE`, `PATH` (its page's
address, the first of its routes) and `routes`. The first page is where a login lands."""

from __future__ import annotations

from types import ModuleType

from . import automations, chat, memory, people, servers, sessions, usage

PAGES: tuple[ModuleType, ...] = (chat, sessions, memory, automations, people, servers, usage)
