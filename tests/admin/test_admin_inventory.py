"""What is stored, seen through the admin API: servers, raw lines, previews
that change nothing; on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import ValidationError
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import Stm
from stm_core.testing.conformance import authored


async def lines_only(stm: Stm, server: str, channel: str) -> None:
    await stm.engine.capture([CaptureWrite(key=MemoryKey.server(server, channel, "p"),
                                    now_ms=stm.clock.now_ms(),
                                    messages=authored(("7", "hello"), ("8", "hi")))])


async def test_list_servers_and_lines_only_rows(stm: Stm) -> None:
    assert await stm.admin.list_servers() == ()
    await lines_only(stm, "g2", "c1")
    await lines_only(stm, "g2", "c2")
    await stm.admin.set_server_params("g1", refresh_cadence=3)
    assert await stm.admin.list_servers() == ("g1", "g2")
    listed = await stm.admin.list_personas(server_id="g2")
    assert [(p.channel_id, p.mode_hint, p.lines) for p in listed] == [("c1", "lines", 2),
                                                                      ("c2", "lines", 2)]
    shot = await stm.admin.view_memory(server_id="g2", channel_id="c1", persona_id="p")
    assert shot.is_empty and [m.content for m in shot.messages] == ["hello", "hi"]
    assert shot.to_dict()["messages"][0]["author_id"] == "7"


async def test_previews_change_nothing(stm: Stm, clock: ManualClock) -> None:
    await lines_only(stm, "g2", "c1")
    preview = await stm.admin.channel_rows("c1")
    assert preview.removed == 1
    clock.advance(minutes=91 * 24 * 60)
    assert await stm.janitor.would_remove() == 1
    doc = await stm.admin.export_config("g2")
    doc["params"]["refresh_cadence"] = 9
    dry = await stm.admin.import_config("g2", doc, dry_run=True)
    assert dry["would_change"] == ["params.refresh_cadence"]
    assert not dry["clears_server_memories"]
    assert (await stm.admin.server_params("g2")).refresh_cadence == 5
    assert await stm.adapter.count_memories() == 1


@pytest.mark.parametrize("kwargs", [{}, {"channel_id": None, "user_id": "u"},
                                    {"channel_id": "", "server_id": "g"},
                                    {"server_id": ["g"]}])
async def test_list_personas_refuses_bad_places(stm: Stm, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        await stm.admin.list_personas(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", None, "a b", "x" * 200])
async def test_channel_rows_refuses_bad_ids(stm: Stm, bad: object) -> None:
    with pytest.raises(ValidationError) as refused:
        await stm.admin.channel_rows(bad)  # type: ignore[arg-type]
    assert refused.value.field == "channel_id"


async def test_channel_rows_lists_the_keys_clear_channel_would_delete(stm: Stm) -> None:
    await lines_only(stm, "g2", "c1")
    preview = await stm.admin.channel_rows("c1")
    assert preview.keys == (MemoryKey.server("g2", "c1", "p"),)
    assert (await stm.admin.clear_channel("c1")).keys == preview.keys


async def test_import_dry_run_must_be_a_bool(stm: Stm) -> None:
    doc = await stm.admin.export_config("g1")
    with pytest.raises(ValidationError):
        await stm.admin.import_config("g1", doc, dry_run=1)  # type: ignore[arg-type]
