"""``stm db upgrade --check``: what an upgrade would do, and whether running
processes would be affected, without changing the database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stm_plugins.sqlalchemy_storage import migrations as mig

from .conftest import RunStm


def versions(db_file: Path) -> list[int]:
    with sqlite3.connect(db_file) as conn:
        return [v for (v,) in conn.execute("SELECT version FROM stm_schema_version")]


def set_version(db_file: Path, version: int) -> None:
    """Pretend another release stopped (or went) there: only the version rows matter."""
    with sqlite3.connect(db_file) as conn:
        conn.execute("DELETE FROM stm_schema_version WHERE version > ?", (version,))
        for v in range(1, version + 1):
            conn.execute("INSERT OR IGNORE INTO stm_schema_version VALUES (?, 0)", (v,))


def test_check_changes_nothing_and_says_who_is_affected(stm_cli: RunStm,
                                                       db_file: Path) -> None:
    fresh = stm_cli("--json", "db", "upgrade", "--check")
    assert fresh.code == 0, fresh.stderr
    assert fresh.json()["database_version"] is None and not db_file.exists()

    assert stm_cli("db", "upgrade").code == 0
    now = stm_cli("--json", "db", "upgrade", "--check").json()
    assert now["pending"] == [] and now["running_processes_affected"] is False

    # One version behind: processes of that release keep working (expand steps).
    set_version(db_file, mig.SCHEMA_VERSION - 1)
    behind = stm_cli("db", "upgrade", "--check")
    assert behind.code == 0 and "safe for running processes" in behind.stdout
    assert versions(db_file) == list(range(1, mig.SCHEMA_VERSION))  # untouched

    # Beyond this code's window: upgrade stm first (exit 1).
    set_version(db_file, mig.NEWEST_USABLE_SCHEMA + 1)
    ahead = stm_cli("--json", "db", "upgrade", "--check")
    assert ahead.code == 1 and ahead.json()["usable"] is False


def test_a_contract_step_is_reported_as_affecting_older_processes() -> None:
    contract = mig.MigrationStep(version=mig.SCHEMA_VERSION + 1, description="drop",
                                 statements=lambda d: [], contracts=True)
    steps = (*mig.MIGRATIONS, contract)
    found = mig.check_upgrade(mig.SCHEMA_VERSION - 1, steps)
    assert found.running_processes_affected and found.oldest_code_after == mig.SCHEMA_VERSION
    assert not mig.check_upgrade(mig.SCHEMA_VERSION, steps).running_processes_affected
