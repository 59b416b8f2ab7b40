"""Without ``--db`` the commands use a per-user default file. When none is
there, the operator most likely meant the bot's database: every command but
``stm db upgrade`` says how to name it, first, and creates nothing."""

from __future__ import annotations

from pathlib import Path

from .conftest import RunStm, ok, refused

NAMING = "name the bot's database with --db URL or STM_DATABASE_URL"


def test_a_missing_default_database_is_refused_naming_db_first(stm_raw: RunStm,
                                                               tmp_path: Path) -> None:
    default = tmp_path / "xdg" / "stm" / "stm.db"
    for command in (("memory", "view", "--server", "7", "--channel", "1001"),
                    ("server", "params", "set", "7", "--cadence", "3"),
                    ("db", "info")):
        line = refused(stm_raw(*command))
        assert line == (f"stm: error: no database at the default location {default}: "
                        f"{NAMING} (`stm db upgrade` creates an empty one there)"), command
        assert not default.exists() and not default.parent.exists()
    shown = ok(stm_raw("db", "path")).stdout
    assert NAMING in shown and shown.index("--db") < shown.index("stm db upgrade")
    checked = ok(stm_raw("db", "upgrade", "--check"))
    assert f"no database at the default location {default} yet: {NAMING}" in checked.stderr
    assert not default.parent.exists()


def test_db_upgrade_creates_it_and_says_how_to_use_another(stm_raw: RunStm,
                                                          tmp_path: Path) -> None:
    default = tmp_path / "xdg" / "stm" / "stm.db"
    created = ok(stm_raw("db", "upgrade"))
    assert f"creating a new database at the default location {default}" in created.stderr
    assert NAMING in created.stderr and default.exists()
    ok(stm_raw("server", "params", "set", "7", "--cadence", "3"))
    used = ok(stm_raw("server", "params", "show", "7"))
    assert f"using the default database {default}" in used.stderr


def test_a_named_database_is_not_the_default_s_business(stm_raw: RunStm,
                                                       tmp_path: Path) -> None:
    line = refused(stm_raw("--db", str(tmp_path / "typo.db"), "db", "info"))
    assert "default location" not in line and "stm db upgrade" in line
