"""The command itself: help with examples, the database location, exit codes."""

from __future__ import annotations

from pathlib import Path

import click

from stm_core.cli import cli

from .conftest import RunStm, ok, refused

#: Registered here, written and documented with their own modules.
EXTERNAL = {"plugins", "demo"}


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command's path, the lazily imported ones included."""
    ctx = click.Context(group)
    paths = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if name in EXTERNAL:
            continue
        path = (*prefix, name)
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, path))
        else:
            paths.append(path)
    return paths


def help_text(path: tuple[str, ...]) -> str:
    """The help click prints for ``stm *path --help`` (in process: fast)."""
    ctx = click.Context(cli, info_name="stm")
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None, name
        command = found
        ctx = click.Context(command, info_name=name, parent=ctx)
    return command.get_help(ctx)


def test_every_subcommand_help_shows_examples() -> None:
    paths = command_paths(cli)
    assert len(paths) > 25
    for path in paths:
        text = help_text(path)
        assert "Examples:" in text, " ".join(path)
        # \b keeps the example lines as written: each starts with "stm".
        first_example = text.split("Examples:", 1)[1].strip().splitlines()[0]
        assert first_example.lstrip().startswith(("stm ", "STM_")), " ".join(path)


def test_installed_script_prints_the_help(stm_raw: RunStm) -> None:
    for path in (("server", "params", "set"), ("memory", "edit"), ("context",)):
        result = ok(stm_raw(*path, "--help"))
        first_example = help_text(path).split("Examples:", 1)[1].strip().splitlines()[0]
        assert first_example in result.stdout


def test_group_help_and_registered_external_commands(stm_raw: RunStm) -> None:
    result = ok(stm_raw("--help"))
    for name in ("server", "memory", "user", "context", "janitor", "db", "config",
                 "plugins", "demo"):
        assert f"  {name} " in result.stdout
    ok(stm_raw("plugins", "--help"))
    ok(stm_raw("demo", "--help"))


def test_default_database_location_is_announced_on_stderr(stm_raw: RunStm,
                                                          tmp_path: Path) -> None:
    ok(stm_raw("db", "upgrade"))
    result = ok(stm_raw("--json", "db", "info"))
    default = tmp_path / "xdg" / "stm" / "stm.db"
    assert str(default) in result.stderr
    assert default.exists()
    assert result.json()["backend"] == "sqlite"


def test_database_url_from_the_environment(stm_raw: RunStm, tmp_path: Path) -> None:
    target = tmp_path / "from-env.db"
    ok(stm_raw("db", "upgrade", env={"STM_DATABASE_URL": f"sqlite+aiosqlite:///{target}"}))
    result = ok(stm_raw("--json", "db", "info",
                        env={"STM_DATABASE_URL": f"sqlite+aiosqlite:///{target}"}))
    assert result.stderr == ""
    assert result.json()["url"].endswith("from-env.db")
    assert target.exists()


def test_db_upgrade_then_info(stm_cli: RunStm) -> None:
    created = ok(stm_cli("--json", "db", "upgrade")).json()
    assert created["created"] and created["to_version"] >= 1
    again = ok(stm_cli("db", "upgrade"))
    assert "already at version" in again.stdout
    info = ok(stm_cli("--json", "db", "info")).json()
    assert info["schema_version"] == created["to_version"]
    assert info["memory_rows"] == 0


def test_validation_error_exits_2_with_one_line(stm_cli: RunStm) -> None:
    line = refused(stm_cli("server", "params", "set", "g1", "--cadence", "500"))
    assert line == "stm: error: --cadence must be an integer from 1 to 100, got 500"


def test_usage_errors_exit_2_with_one_line(stm_cli: RunStm) -> None:
    assert "--server" in refused(stm_cli("memory", "view", "--channel", "c1"))
    assert "not a valid integer" in refused(stm_cli("server", "params", "set", "g1",
                                                    "--cadence", "x"))
    assert "No such command" in refused(stm_cli("nosuch"))


def test_unknown_database_scheme_exits_2(stm_raw: RunStm) -> None:
    line = refused(stm_raw("--db", "nosuch://x", "db", "info"))
    assert "nosuch://" in line


def test_bad_environment_setting_exits_2(stm_cli: RunStm) -> None:
    line = refused(stm_cli("db", "info", env={"STM_MAX_CATEGORIES": "many"}))
    assert "STM_MAX_CATEGORIES" in line


def test_runtime_failure_exits_1_without_traceback(stm_raw: RunStm, tmp_path: Path) -> None:
    # A folder where the database file should be: SQLite cannot open it.
    folder = tmp_path / "a-folder"
    folder.mkdir()
    url = f"sqlite+aiosqlite:///{folder}"
    line = refused(stm_raw("--db", url, "db", "info"), code=1)
    assert "a-folder" in line
    debug = stm_raw("--db", url, "db", "info", env={"STM_DEBUG": "1"})
    assert debug.code == 1 and "Traceback" in debug.stderr
