"""adapter_for_url: the documented way to get (and wrap) a built-in adapter;
and the SQLite adapter runs on the standard library, not aiosqlite."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from stm_core import Settings, StorageAdapterSpec, adapter_for_url, hookimpl
from stm_core.errors import UnknownDatabaseURL, ValidationError
from stm_core.storage.protocol import StorageAdapter
from stm_core.storage.records import MemoryRecord, MemoryWrite
from stm_core.testing import StorageAdapterConformance

from .helpers import OpenStm


class CountingAdapter:
    """Wraps whatever adapter claims the inner URL, counting memory writes.
    ``counting+sqlite:///x.db`` wraps ``sqlite:///x.db``."""

    def __init__(self, url: str, settings: Settings | None = None) -> None:
        self.inner = adapter_for_url(url.removeprefix("counting+"), settings)
        self.memory_writes = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        records: list[MemoryRecord] = await self.inner.write_memory(writes)
        self.memory_writes += len(records)
        return records


class CountingPlugin:
    @hookimpl
    def stm_register_storage_adapters(self) -> Iterable[StorageAdapterSpec]:
        return [StorageAdapterSpec(name="counting", schemes=("counting+sqlite",),
                                   factory=CountingAdapter)]


@pytest.mark.parametrize("scheme", ["sqlite", "sqlite+aiosqlite"])
async def test_a_wrapper_around_the_sqlite_adapter_works_through_open_store(
        open_stm: OpenStm, tmp_path: Path, scheme: str) -> None:
    from stm_core.models import Turn

    url = f"counting+sqlite:///{tmp_path / 'wrapped.db'}"
    turn = Turn(user_id="1", channel_id="2", server_id="3", provider="openai")
    async with open_stm(url, plugins=[CountingPlugin()]) as stm:
        assert (await stm.apply_tool_call(turn, {"summary": "kept"})).ok
        assert isinstance(stm.adapter, CountingAdapter) and stm.adapter.memory_writes >= 1
    async with open_stm(f"{scheme}:///{tmp_path / 'wrapped.db'}") as plain:
        view = await plain.engine.server_memories("3")
        assert [r.summary for r in view.records.values()] == ["kept"]


@pytest.mark.parametrize("url, class_name", [
    ("memory://", "MemoryAdapter"),
    ("sqlite:///:memory:", "SqliteAdapter"),
    ("sqlite+aiosqlite:///:memory:", "SqliteAdapter"),
    ("postgresql://u@h/db", "PostgresAdapter"),
])
def test_each_built_in_scheme_gives_its_adapter_unopened(url: str, class_name: str) -> None:
    adapter = adapter_for_url(url)

    assert type(adapter).__name__ == class_name
    assert isinstance(adapter, StorageAdapter)


def test_an_unknown_scheme_names_the_registered_ones() -> None:
    with pytest.raises(UnknownDatabaseURL, match=r"mysql://.*memory://.*sqlite://"):
        adapter_for_url("mysql://u@h/db")


@pytest.mark.parametrize("url, settings", [(None, None), (b"sqlite://", None), (3, None),
                                           ("memory://", {"ttl_hours": 1})])
def test_wrong_types_are_validation_errors(url: object, settings: object) -> None:
    with pytest.raises(ValidationError):
        adapter_for_url(url, settings)  # type: ignore[arg-type]


class TestWrappedSqliteConformance(StorageAdapterConformance):
    @pytest.fixture
    async def adapter(self, tmp_path: Path) -> object:
        wrapped = CountingAdapter(f"counting+sqlite:///{tmp_path / 'c.db'}")
        await wrapped.setup()
        yield wrapped
        await wrapped.aclose()


def test_aiosqlite_is_not_a_runtime_dependency_and_is_never_imported(tmp_path: Path) -> None:
    requires = importlib.metadata.requires("stm-core") or []
    runtime = [r for r in requires if "extra ==" not in r]
    assert not any(r.lower().startswith("aiosqlite") for r in runtime), runtime
    script = (
        "import asyncio, sys\n"
        "from stm_core import open_store, Settings, Turn\n"
        "async def main():\n"
        f"    for url in ('sqlite:///{tmp_path / 'a.db'}', "
        f"'sqlite+aiosqlite:///{tmp_path / 'b.db'}'):\n"
        "        async with open_store(url, settings=Settings(), load_entrypoints=False) as s:\n"
        "            t = Turn(user_id='1', channel_id='2', server_id='3', provider='openai')\n"
        "            assert (await s.apply_tool_call(t, {'summary': 'x'})).ok\n"
        "            await s.build_context(t)\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'aiosqlite'))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=False)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
