"""Persona templates are not memories: their empty fields are left out of the index, in any language.

Seen before: the blank `USER.md` (`- Name:` / `- What to call them:`) outranked "The user's cat is called Miso"
for the query "cat name".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

import hermitcrab.workspace
from hermitcrab.servers.memory.chunking import chunk_markdown
from hermitcrab.servers.memory.embed import Embedder
from tests.servers.memory.conftest import MemoryServer
from tests.support.tools import call, search

SHIPPED_USER = (Path(hermitcrab.workspace.__file__).parent / "USER.md").read_text(encoding="utf-8")

# (USER.md as a blank template, the note that answers, the question), one per language a template is written in;
# Japanese writes the full-width colon and parentheses (\uff1a, \uff08 \uff09)
BLANK_TEMPLATES = {
    "English": (SHIPPED_USER, "- The user's cat is called Miso.", "cat name"),
    "German": (
        "# Nutzer\n\n- Name:\n- Wie nennen:\n- Zeitzone:\n- Notizen: (Vorlieben, Projekte, wichtige Menschen)\n",
        "- Die Katze des Nutzers heißt Miso.",
        "Name der Katze",
    ),
    "Japanese": (
        "# ユーザー\n\n1. 名前\uff1a\n2. 呼び方\uff1a\n3. タイムゾーン\uff1a\n"
        "4. メモ\uff1a\uff08好み、プロジェクト、大切な人\uff09\n",
        "- ユーザーの猫の名前はミソです。",
        "猫の名前",
    ),
}


@pytest.mark.parametrize(
    "template",
    [
        SHIPPED_USER,
        "# Nutzer\n\n- Name:\n- Wie nennen:\n",
        "# ユーザー\n\n1. 名前\uff1a\n2. 呼び方\uff1a\uff08未定\uff09\n",
        "* **Pronouns:**\n* **Birthday**:\n",
        "Name:\nPronouns:\n",
        "## Contact\n\n- Phone: _(optional)_\n- Email:\n",
    ],
)
def test_a_template_s_empty_fields_and_their_heading_are_not_units(template: str) -> None:
    assert chunk_markdown(template) == []


def test_filled_fields_are_units_and_empty_ones_between_them_are_not() -> None:
    chunks = chunk_markdown("# User\n\n- Name: Ada\n- Pronouns:\n- **Cat:** Miso\n- Notes: (preferences)\n")
    assert [(chunk.start_line, chunk.text) for chunk in chunks] == [(3, "- Name: Ada"), (5, "- **Cat:** Miso")]


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("- Groceries:\n  - milk\n  - eggs\n", "- Groceries:"),
        ("Things to buy:\n- milk\n", "Things to buy:"),
        ("Name:\nAda Lovelace\n", "Name:\nAda Lovelace"),
        ("Config:\n```\nport: 8080\n```\n", "Config:"),
        ("- user: my cat is called Miso\n- assistant:\n", "- user: my cat is called Miso"),
    ],
)
def test_a_label_that_introduces_what_follows_it_stays(text: str, label: str) -> None:
    assert chunk_markdown(text)[0].text == label


@pytest.mark.parametrize("language", BLANK_TEMPLATES)
async def test_a_blank_template_never_outranks_the_note_that_answers(
    language: str, memory_server: MemoryServer, workspace: Path, use_embedder: Embedder
) -> None:
    template, note, query = BLANK_TEMPLATES[language]
    (workspace / "USER.md").write_text(template, encoding="utf-8")
    with (workspace / "MEMORY.md").open("a", encoding="utf-8") as memory:
        memory.write(f"\n## Pets\n\n{note}\n")
    async with Client(memory_server(embedder=use_embedder)) as client:
        results = await search(client, query)
        shown = await call(client, "memory_get", path="USER.md")
    assert note in results[0]["snippet"]
    assert "USER.md" not in [result["path"] for result in results]
    assert shown["text"] == template.rstrip("\n")


async def test_a_filled_field_of_a_half_filled_template_is_found(
    memory_server: MemoryServer, workspace: Path, use_embedder: Embedder
) -> None:
    (workspace / "USER.md").write_text(
        "# User\n\n- Name: Ada Lovelace\n- What to call them:\n- Time zone: Europe/Lisbon\n- Pets:\n", encoding="utf-8"
    )
    async with Client(memory_server(embedder=use_embedder)) as client:
        results = await search(client, "Which time zone is the user in?")
    top = results[0]
    assert top["path"] == "USER.md"
    assert "- Time zone: Europe/Lisbon" in top["snippet"]
    assert "What to call them" not in top["snippet"] and "Pets" not in top["snippet"]
