"""`hermitcrab service`: the unit systemd would load, the agent launchd would load, and what install/uninstall do.

systemd cannot run in this container (PID 1 is not systemd, so `systemd --user` refuses to start), and no test may
touch the real user manager of whoever runs the suite: the commands go to a recording `systemctl` put first on
PATH. The unit files themselves are checked by systemd's own parser, `systemd-analyze verify --user`.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app, main
from hermitcrab.install.service import (
    Command,
    Launchd,
    Program,
    ServiceError,
    Systemd,
    launchd_state,
    manager_for,
    write,
)

runner = CliRunner()

RUNNING = """ActiveState=active
SubState=running
MainPID=4242
NRestarts=2
ExecMainStatus=1
ExecMainExitTimestamp=Tue 2026-12-01 13:05:00 UTC
Result=success
"""


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A login home of its own: the unit goes to its ~/.config/systemd/user."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


@pytest.fixture
def systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_home: Path) -> Path:
    """A `systemctl` first on PATH that appends its arguments to the returned file and answers `show`."""
    calls = tmp_path / "systemctl-calls"
    calls.touch()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "systemctl"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        f"case \"$*\" in *' show '*) printf '%s' '{RUNNING}';; esac\n"
        'if [ -n "$SYSTEMCTL_FAIL" ]; then echo "$SYSTEMCTL_FAIL" >&2; exit 1; fi\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return calls


def unit_path(user_home: Path) -> Path:
    return user_home / ".config" / "systemd" / "user" / "hermitcrab.service"


def settings_of(unit: Path) -> list[tuple[str, str]]:
    """The unit's Key=Value lines in order (Environment= repeats, so no dict)."""
    lines = [line for line in unit.read_text().splitlines() if "=" in line and not line.startswith("#")]
    return [(key, value) for key, _, value in (line.partition("=") for line in lines)]


def verify(unit: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """systemd's own parser on the unit: it also checks that ExecStart's program exists and is executable."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze not installed (apt-get install systemd)")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    environ = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    return subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)], env=environ, capture_output=True, text=True, timeout=60
    )


def files_under(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}


def test_install_writes_a_user_unit_that_systemd_accepts(user_home: Path, hermitcrab_home: Path, tmp_path: Path):
    result = runner.invoke(app, ["service", "install", "--no-start"])

    assert result.exit_code == 0, result.output
    unit = unit_path(user_home)
    assert f"wrote {unit}" in result.stdout
    checked = verify(unit, tmp_path)
    assert (checked.returncode, checked.stderr) == (0, "")
    settings = settings_of(unit)
    script = Path(sys.executable).parent / "hermitcrab"
    assert ("ExecStart", f'"{script}" "run"') in settings
    assert ("Environment", f'"HERMITCRAB_HOME={hermitcrab_home}"') in settings
    assert {("Restart", "on-failure"), ("RestartSec", "10"), ("StartLimitBurst", "5")} <= set(settings)
    assert ("WantedBy", "default.target") in settings


def test_the_unit_quotes_paths_with_spaces_and_percent_signs(tmp_path: Path):
    script = tmp_path / "my venv 100%" / "bin" / "hermitcrab"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    systemd = Systemd({"XDG_CONFIG_HOME": str(tmp_path / "config")})
    write(systemd, Program(script, tmp_path / "home with $HOME", "/usr/bin:/bin"))

    assert verify(systemd.path, tmp_path).returncode == 0
    script.unlink()  # the same check fails once the quoted path names nothing: systemd read the path we meant
    assert "is not executable" in verify(systemd.path, tmp_path).stderr


def test_install_honours_xdg_config_home(user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))

    result = runner.invoke(app, ["service", "install", "--no-start"])

    assert result.exit_code == 0, result.output
    assert (tmp_path / "xdg" / "systemd" / "user" / "hermitcrab.service").exists()
    assert not unit_path(user_home).exists()


def test_install_twice_changes_nothing_and_another_home_rewrites_the_unit(
    user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    runner.invoke(app, ["service", "install", "--no-start"])
    first = unit_path(user_home).read_text()

    again = runner.invoke(app, ["service", "install", "--no-start"])

    assert again.exit_code == 0 and "unchanged" in again.stdout
    assert unit_path(user_home).read_text() == first
    monkeypatch.setenv("HERMITCRAB_HOME", str(tmp_path / "other-home"))
    moved = runner.invoke(app, ["service", "install", "--no-start"])
    assert "wrote" in moved.stdout
    assert f"HERMITCRAB_HOME={tmp_path / 'other-home'}" in unit_path(user_home).read_text()


def test_install_enables_and_restarts_the_unit_through_systemctl(user_home: Path, systemctl: Path):
    result = runner.invoke(app, ["service", "install"])

    assert result.exit_code == 0, result.output
    assert systemctl.read_text().splitlines() == [
        "--user daemon-reload",
        "--user enable hermitcrab.service",
        "--user restart hermitcrab.service",
    ]
    assert "logs: journalctl --user -u hermitcrab -f" in result.stdout


def test_install_refuses_before_writing_where_nothing_could_start_the_service(
    user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))

    result = runner.invoke(app, ["service", "install"])

    assert result.exit_code == 1 and "no systemctl on PATH" in str(result.exception)
    assert not unit_path(user_home).exists()


def test_uninstall_stops_the_service_and_removes_exactly_what_install_wrote(user_home: Path, systemctl: Path):
    before = files_under(user_home)
    runner.invoke(app, ["service", "install"])
    assert set(files_under(user_home)) - set(before) == {unit_path(user_home)}

    result = runner.invoke(app, ["service", "uninstall"])

    assert result.exit_code == 0, result.output
    assert files_under(user_home) == before
    assert systemctl.read_text().splitlines()[-2:] == [
        "--user disable --now hermitcrab.service",
        "--user daemon-reload",
    ]


def test_a_file_written_without_systemctl_is_uninstalled_too(
    user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    assert runner.invoke(app, ["service", "install", "--no-start"]).exit_code == 0
    assert unit_path(user_home).exists()

    result = runner.invoke(app, ["service", "uninstall"])

    assert result.exit_code == 0, result.output
    assert not unit_path(user_home).exists()


def test_uninstall_with_nothing_installed_says_so(user_home: Path, systemctl: Path):
    result = runner.invoke(app, ["service", "uninstall"])

    assert result.exit_code == 0
    assert "not installed" in result.stdout and systemctl.read_text() == ""


def test_status_with_nothing_installed_says_so_and_exits_3(user_home: Path, systemctl: Path):
    result = runner.invoke(app, ["service", "status"])

    assert result.exit_code == 3
    assert result.stdout.startswith("installed: no")
    assert systemctl.read_text() == ""


def test_status_reports_running_restarts_last_exit_and_logs(user_home: Path, systemctl: Path, hermitcrab_home: Path):
    runner.invoke(app, ["service", "install", "--no-start"])

    result = runner.invoke(app, ["service", "status"])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"installed: {unit_path(user_home)}",
        "running: yes (pid 4242), 2 automatic restarts since it was last started",
        "last exit: status 1 at Tue 2026-12-01 13:05:00 UTC (success)",
        "logs: journalctl --user -u hermitcrab -f",
        f"host log: {hermitcrab_home / 'state' / 'logs' / 'host.log'}",
    ]


def test_dry_run_prints_the_unit_and_the_commands_and_changes_nothing(user_home: Path, systemctl: Path):
    installed = runner.invoke(app, ["service", "install", "--dry-run"])
    runner.invoke(app, ["service", "install", "--no-start"])
    removed = runner.invoke(app, ["service", "uninstall", "--dry-run"])

    assert f"would write {unit_path(user_home)}:\n# Written by `hermitcrab service install`" in installed.stdout
    assert "would run: systemctl --user enable hermitcrab.service" in installed.stdout
    assert "would run: systemctl --user disable --now hermitcrab.service" in removed.stdout
    assert f"would remove {unit_path(user_home)}" in removed.stdout
    assert unit_path(user_home).exists() and systemctl.read_text() == ""


def test_a_failing_systemctl_is_one_line_on_stderr_not_a_traceback(
    user_home: Path, systemctl: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("SYSTEMCTL_FAIL", "Failed to connect to bus: No medium found")
    monkeypatch.setattr(sys, "argv", ["hermitcrab", "service", "install"])

    with pytest.raises(SystemExit) as exited:
        main()

    assert exited.value.code == 1
    said = capsys.readouterr().err
    assert said.splitlines()[-1] == (
        "error: `systemctl --user daemon-reload` failed (exit 1): Failed to connect to bus: No medium found"
    )
    assert "Traceback" not in said


def test_install_warns_when_the_service_would_have_no_model_provider(
    user_home: Path, hermitcrab_home: Path, monkeypatch: pytest.MonkeyPatch
):
    runner.invoke(app, ["init"])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-only-in-this-shell")

    from_shell = runner.invoke(app, ["service", "install", "--no-start"])

    assert "no model provider is configured" in from_shell.stderr
    config = hermitcrab_home / "config.toml"
    config.write_text(f'[[providers]]\nkind = "openai"\napi_key = "sk-test"\n\n{config.read_text()}')
    assert runner.invoke(app, ["service", "install", "--no-start"]).stderr == ""


def test_the_launchd_agent_restarts_on_failure_and_logs_to_library_logs(user_home: Path, tmp_path: Path):
    launchd = Launchd(501)
    program = Program(tmp_path / "venv" / "bin" / "hermitcrab", tmp_path / "home", "/opt/homebrew/bin:/usr/bin")

    write(launchd, program)

    assert launchd.path == user_home / "Library" / "LaunchAgents" / "local.hermitcrab.plist"
    agent = plistlib.loads(launchd.path.read_bytes())
    assert agent["Label"] == "local.hermitcrab"
    assert agent["ProgramArguments"] == [str(program.script), "run"]
    assert agent["EnvironmentVariables"]["HERMITCRAB_HOME"] == str(tmp_path / "home")
    assert agent["KeepAlive"] == {"SuccessfulExit": False} and agent["RunAtLoad"] is True
    assert agent["StandardErrorPath"] == str(user_home / "Library" / "Logs" / "hermitcrab.log")
    assert launchd.start() == [
        Command(("launchctl", "bootout", "gui/501/local.hermitcrab"), may_fail=True),
        Command(("launchctl", "bootstrap", "gui/501", str(launchd.path))),
    ]


def test_launchctl_print_gives_state_pid_and_last_exit():
    printed = (
        "gui/501/local.hermitcrab = {\n\tactive count = 1\n\tstate = running\n\tdomain = {\n\t\tstate = active\n\t}\n"
        "\tpid = 4242\n\tlast exit code = 1\n}\n"
    )

    state = launchd_state(printed)

    assert state.running is True
    assert state.lines == ["running: yes (pid 4242)", "last exit: 1"]


def test_other_platforms_get_a_clear_error():
    with pytest.raises(ServiceError, match="systemd \\(Linux\\) and launchd \\(macOS\\), not win32"):
        manager_for({}, "win32")


@pytest.mark.parametrize("command", [[], ["install"], ["uninstall"], ["status"]])
def test_every_service_command_has_help(command: list[str]):
    result = runner.invoke(app, ["service", *command, "--help"])

    assert result.exit_code == 0 and "Usage" in result.output


def test_doctor_says_whether_the_service_is_installed_and_running(user_home: Path, systemctl: Path):
    wide = {"COLUMNS": "400"}  # one table row per line
    before = runner.invoke(app, ["doctor"], env=wide)
    runner.invoke(app, ["service", "install", "--no-start"])

    after = runner.invoke(app, ["doctor"], env=wide)

    assert re.search(r"ok .* service .* installed .* no: `hermitcrab service install` keeps it running", before.stdout)
    assert re.search(rf"ok .* service .* {unit_path(user_home)} .* running: yes \(pid 4242\)", after.stdout)


def test_install_names_every_variable_only_this_shell_sets(
    user_home: Path, hermitcrab_home: Path, monkeypatch: pytest.MonkeyPatch
):
    runner.invoke(app, ["init"])
    config = hermitcrab_home / "config.toml"
    config.write_text(f'[[providers]]\nkind = "openai"\napi_key = "sk-test"\n\n{config.read_text()}')
    monkeypatch.setenv("DISCORD_TOKEN", "discord-secret-in-shell")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:telegram-secret")
    monkeypatch.setenv("HERMITCRAB_MODEL", "gpt-5")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-vendor")  # the profile has its own key: nothing is lost

    said = runner.invoke(app, ["service", "install", "--no-start"]).stderr

    assert "the service will not see DISCORD_TOKEN, HERMITCRAB_MODEL, TELEGRAM_BOT_TOKEN:" in said, said
    assert "DISCORD_TOKEN as [discord] token" in said and "TELEGRAM_BOT_TOKEN as [telegram] token" in said
    assert "OPENAI_API_KEY" not in said
    assert "discord-secret-in-shell" not in said and "telegram-secret" not in said
