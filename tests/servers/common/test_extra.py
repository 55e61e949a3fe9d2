"""A server package whose import finds a module missing: a third-party one names the extra, one of ours is a bug."""

from __future__ import annotations

import pytest

from hermitcrab.servers._common.extra import exit_for_missing_extra


def test_a_missing_third_party_module_exits_2_naming_the_extra_in_one_line(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exited:
        exit_for_missing_extra("browser", ModuleNotFoundError("No module named 'playwright'", name="playwright"))

    assert exited.value.code == 2
    assert capsys.readouterr().err == "hermitcrab-browser needs the browser extra: pip install 'hermitcrab[browser]'\n"


def test_a_missing_module_of_hermitcrab_itself_is_raised_as_it_is():
    missing = ModuleNotFoundError("No module named 'hermitcrab.servers.cron.gone'", name="hermitcrab.servers.cron.gone")

    with pytest.raises(ModuleNotFoundError) as raised:
        exit_for_missing_extra("cron", missing)

    assert raised.value is missing
