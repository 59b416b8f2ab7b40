"""SQLite's precompiled SQL is exactly what SQLAlchemy compiles from the builders.

Short commands on SQLite run SQL compiled ahead of time (no SQLAlchemy import).
These tests keep that SQL honest: the generated module must be what the
generator writes now, and every precompiled statement, built the way the
adapter builds it, must compile to the very same text and constants.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stm_core.storage.records import (
    SERVER_SETTING_FIELDS,
    CategoryRecord,
    MemoryFilter,
    MemoryKey,
    MemoryWrite,
    NewestRows,
    RevisionNote,
)
from stm_plugins.sqlalchemy_storage import precompile, sqlite_precompiled
from stm_plugins.sqlalchemy_storage.codec import FILTER_FIELDS
from stm_plugins.sqlalchemy_storage.compiled import (
    Compiled,
    PrecompiledMismatch,
    StatementCache,
)
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter
from stm_plugins.sqlalchemy_storage.urls import SqliteTarget
from tests.storage.helpers import NOW, turn

#: A value each server setting accepts, to write every column alone.
SAMPLE_SETTINGS: dict[str, object] = {
    "refresh_cadence": 7, "render_mode": "crude", "crude_message_count": 5,
    "nudge_injection_depth": 2, "content_injection_depth": 3,
    "tool_description_override": "describe", "update_nudge_override": "nudge",
    "stm_enabled": True, "private_channel_ids": frozenset({"c9"}), "privacy_bypass": True,
    "cache_policy": "stable", "prompt_budget_tokens": 500,
}


def test_the_generated_module_is_what_the_generator_writes_now() -> None:
    source = Path(sqlite_precompiled.__file__).read_text(encoding="utf-8")
    assert source == precompile.render(), (
        "sqlite_precompiled.py is stale: python -m stm_plugins.sqlalchemy_storage.precompile")


def test_every_server_setting_has_a_sample() -> None:
    assert set(SAMPLE_SETTINGS) == set(SERVER_SETTING_FIELDS)


async def test_every_precompiled_statement_matches_the_adapters_own_builder(
        tmp_path: Path) -> None:
    adapter = SqliteAdapter(SqliteTarget(path=str(tmp_path / "v.db")))
    # Compare on first use, whatever the environment says.
    adapter._sql = StatementCache("sqlite", sqlite_precompiled.STATEMENTS, verify=True)
    await adapter.setup()
    try:
        key = MemoryKey.server("g1", "c1", None)
        await adapter.capture(turn("c1"))
        await adapter.write_memory([MemoryWrite(key=key, now_ms=NOW, set_summary=True,
                                                summary="s")])
        await adapter.write_memory([MemoryWrite(key=key, now_ms=NOW, set_summary=True,
                                                summary="t",
                                                revision=RevisionNote(author="model"))])
        await adapter.list_revisions(key)
        await adapter.get_memory(key)
        await adapter.count_memories()
        await adapter.load_server_settings("g1")
        await adapter.load_server_memories("g1", updated_since_ms=0)
        for lineage, hidden, crude in itertools.product((None, "L"), ((), ("c9",)), (None, 0)):
            await adapter.newest_server_memories([NewestRows(
                server_id="g1", updated_since_ms=0, limit=3, lineage=lineage,
                hidden_channels=hidden, crude_since_ms=crude)])
        await adapter.load_user_prefs("u1")
        await adapter.load_user_memories("u1", updated_since_ms=0)
        await adapter.set_user_prefs("u1", crossserver_opt_in=True, now_ms=NOW)
        await adapter.change_private_channels("g1", add={"c2"}, now_ms=NOW)
        await adapter.update_server_settings("g1", {}, now_ms=NOW)
        for name, value in SAMPLE_SETTINGS.items():
            await adapter.update_server_settings("g1", {name: value}, now_ms=NOW)
        await adapter.replace_categories("g1", [CategoryRecord(position=0, label="a",
                                                               description="d")],
                                         now_ms=NOW, clear_server_memories=True)
        for scope in ("server", "user"):  # each written into its statements
            values = {"channel_id": "c1", "user_id": "u1", "server_id": "g1",
                      "scope_kind": scope, "persona_id": "p"}
            for n in range(1, len(FILTER_FIELDS) + 1):
                for fields in itertools.combinations(FILTER_FIELDS, n):
                    flt = MemoryFilter(**{f: values[f] for f in fields})  # type: ignore[arg-type]
                    await adapter.list_memories(flt)
                    await adapter.delete_memories(flt)
        await adapter.purge_older_than(NOW, batch_size=10)
        assert set(sqlite_precompiled.STATEMENTS) - adapter._sql.verified == set()
    finally:
        await adapter.aclose()


def test_a_stale_seed_fails_on_first_use() -> None:
    import sqlalchemy as sa

    stale = {"q": Compiled(sql="SELECT 2")}
    cache = StatementCache("sqlite", stale, verify=True)
    with pytest.raises(PrecompiledMismatch, match="'q' is stale"):
        cache.get("q", lambda: sa.select(sa.literal_column("1")))


def test_a_seeded_statement_is_used_as_is_without_verify() -> None:
    seeded = Compiled(sql="SELECT 1")
    cache = StatementCache("sqlite", {"q": seeded})

    def never() -> object:
        raise AssertionError("a seeded statement is not built again")

    assert cache.get("q", never) is seeded  # type: ignore[arg-type]


def test_a_show_command_on_sqlite_imports_none_of_the_slow_packages(tmp_path: Path) -> None:
    """SQLAlchemy only compiles statements; importlib.metadata only finds plugins
    (none are installed here); cattrs only reads and writes config documents."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    stm = Path(sys.executable).with_name("stm")
    subprocess.run([str(stm), "--db", url, "db", "upgrade"], check=True, capture_output=True)
    code = ("import sys; from stm_core.cli import main\n"
            "try:\n    main([" + f"'--db', {url!r}, 'server', 'params', 'show', '42'" + "])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "slow = ('sqlalchemy', 'cattrs', 'importlib.metadata')\n"
            "print(sorted(m for m in sys.modules if m.startswith(slow)))")
    env = {k: v for k, v in os.environ.items() if k != "STM_VERIFY_PRECOMPILED_SQL"}
    # Run where an operator would: not in a source checkout, whose egg-info
    # folder would send the version lookup to importlib.metadata.
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=env, cwd=tmp_path).stdout
    assert out.strip().splitlines()[-1] == "[]"
