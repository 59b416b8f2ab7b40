"""``open_store`` on every URL form the SQL adapter claims, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import ConfigurationError
from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS

from .helpers import OpenStm, turn


async def round_trip(open_stm: OpenStm, url: str, clock: ManualClock, *,
                     persistent: bool = True) -> None:
    async with open_stm(url) as stm:
        assert stm.schema_status is not None and stm.schema_status.created
        written = await stm.engine.capture(turn("c1", now=clock.now_ms()))
        await stm.engine.write_memory([MemoryWrite(key=written[0].key, now_ms=clock.now_ms(),
                                            set_summary=True, summary="remembered")])
        await stm.adapter.update_server_settings("g1", {"refresh_cadence": 3},
                                                 now_ms=clock.now_ms())
    if not persistent:
        return
    async with open_stm(url) as stm:
        status = stm.schema_status
        assert status is not None
        latest = MIGRATIONS[-1].version
        assert (status.created, status.from_version, status.to_version) == (
            False, latest, latest)
        view = await stm.engine.server_memories("g1")
        record = view.records[MemoryKey.server("g1", "c1", None)]
        assert record.summary == "remembered"
        assert record.turns_since_refresh == 1
        assert (await stm.engine.server_settings("g1")).refresh_cadence == 3


@pytest.mark.parametrize("scheme", ["sqlite+aiosqlite", "sqlite"])
async def test_absolute_sqlite_path(open_stm: OpenStm, tmp_path: Path, clock: ManualClock,
                                    scheme: str) -> None:
    await round_trip(open_stm, f"{scheme}:///{tmp_path / 'abs.db'}", clock)
    assert (tmp_path / "abs.db").exists()


async def test_relative_sqlite_path(open_stm: OpenStm, tmp_path: Path, clock: ManualClock,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    await round_trip(open_stm, "sqlite+aiosqlite:///data/bot.db", clock)
    assert (tmp_path / "data" / "bot.db").exists()


async def test_in_memory_sqlite(open_stm: OpenStm, clock: ManualClock) -> None:
    await round_trip(open_stm, "sqlite+aiosqlite:///:memory:", clock, persistent=False)


@pytest.mark.parametrize("scheme", ["postgresql+asyncpg", "postgresql", "postgres"])
async def test_postgres_url_forms(open_stm: OpenStm, pg_url: str, clock: ManualClock,
                                  scheme: str) -> None:
    url = scheme + "://" + pg_url.split("://", 1)[1]
    await round_trip(open_stm, url, clock)


@pytest.mark.parametrize("url, message", [
    ("sqlite+aiosqlite://", "names no file"),
    ("sqlite+aiosqlite:///", "names no file"),
    ("sqlite+aiosqlite:///stm.db?mode=ro", "no query options"),
    ("sqlite://host/stm.db", "host part"),
    ("postgresql+asyncpg://u@h/db?schema=bad-name", "plain identifier"),
    ("postgresql+asyncpg://u@h/db?schema=x&schema=y", "given twice"),
    ("postgresql+asyncpg://u@h/db?pool=3", "unknown PostgreSQL URL option"),
    ("postgresql+asyncpg://u@h/db?statement_cache_size=lots", "whole number"),
])
async def test_unusable_urls_are_configuration_errors(open_stm: OpenStm, url: str,
                                                      message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        async with open_stm(url):
            pass
