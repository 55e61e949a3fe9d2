"""A skill invoked as `/<skill> args` in `hermitcrab chat`: the model's request carries the skill's body."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_llm import openai_text


def test_a_skill_command_in_the_terminal_chat_sends_its_body(hermitcrab, hermitcrab_home: Path, llm):
    folder = hermitcrab_home / "workspace" / "skills" / "standup"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: standup\ndescription: Draft a standup note.\n---\n"
        "List yesterday, today and blockers for $ARGUMENTS.\n"
    )
    llm.enqueue(openai_text("Standup drafted."))

    result = hermitcrab("chat", stdin="/standup team hermit\n/exit\n", env={"HOME": str(hermitcrab_home)})

    assert result.returncode == 0, result.stderr
    assert "Standup drafted." in result.stdout
    request = llm.requests[0]["messages"]
    assert "List yesterday, today and blockers for team hermit." in request[-1]["content"]
    assert "- standup: Draft a standup note." in request[0]["content"]
    assert any(tool["function"]["name"] == "skill" for tool in llm.requests[0]["tools"])
