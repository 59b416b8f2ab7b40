"""``stm memory``, ``stm user``, ``stm janitor`` and ``stm config`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

from stm_core._util.clock import ManualClock, SystemClock
from stm_core.models import CrudeMessage
from stm_core.storage.records import CaptureWrite, MemoryKey, MemoryWrite
from stm_core.store import open_store

from .conftest import RunStm, ok, refused


async def seed(url: str, writes: list[MemoryWrite], *, clock: ManualClock | None = None) -> None:
    async with open_store(url, load_entrypoints=False, clock=clock) as stm:
        await stm.engine.write_memory(writes)


def test_memory_edit_view_list_in_a_guild(stm_cli: RunStm) -> None:
    edited = ok(stm_cli("--json", "memory", "edit", "--server", "g1", "--channel", "c1",
                        "--persona", "p1", "--user", "u1", "--summary",
                        "The party met Bob.")).json()
    assert edited["snapshot"]["text"] == "The party met Bob."
    assert [k["scope_kind"] for k in edited["keys"]] == ["server", "user"]

    view = ok(stm_cli("memory", "view", "--server", "g1", "--channel", "c1",
                      "--persona", "p1"))
    assert "The party met Bob." in view.stdout and "shared by everyone" in view.stdout

    listed = ok(stm_cli("--json", "memory", "list", "--server", "g1", "--channel", "c1")).json()
    assert [p["persona_id"] for p in listed] == ["p1"]

    cleared = ok(stm_cli("--json", "memory", "edit", "--server", "g1", "--channel", "c1",
                         "--persona", "p1", "--clear")).json()
    assert cleared["cleared"] and cleared["snapshot"]["is_empty"]
    assert ok(stm_cli("--json", "memory", "list", "--server", "g1",
                      "--channel", "c1")).json() == []


def test_memory_edit_categories_and_truncation_note(stm_cli: RunStm) -> None:
    ok(stm_cli("server", "categories", "set", "g1", "--yes", "--line", "Goals: g", "--line",
               "HP/MP: h"))
    result = ok(stm_cli("memory", "edit", "--server", "g1", "--channel", "c1", "--persona",
                        "p1", "--field", "HP/MP=12/30", "--field", "goals=" + "x" * 1600))
    assert "cut to the length limit: goals" in result.stderr
    view = ok(stm_cli("--json", "memory", "view", "--server", "g1", "--channel", "c1",
                      "--persona", "p1")).json()
    assert [s["label"] for s in view["sections"]] == ["Goals", "HP/MP"]
    assert len(view["sections"][0]["text"]) == 1500
    line = refused(stm_cli("memory", "edit", "--server", "g1", "--channel", "c1",
                           "--persona", "p1", "--field", "Nope=x"))
    assert "unknown category 'Nope'" in line


def test_memory_in_a_dm(stm_cli: RunStm) -> None:
    ok(stm_cli("memory", "edit", "--dm", "--user", "u1", "--channel", "d1", "--persona",
               "p1", "--summary", "DM notes"))
    view = ok(stm_cli("--json", "memory", "view", "--dm", "--user", "u1", "--channel", "d1",
                      "--persona", "p1")).json()
    assert view["scope"] == "dm" and view["text"] == "DM notes"
    result = stm_cli("memory", "view", "--dm", "--channel", "d1")
    assert result.code == 2 and "--user" in result.stderr


def test_clear_channel_and_user(stm_cli: RunStm) -> None:
    for persona in ("p1", "p2"):
        ok(stm_cli("memory", "edit", "--server", "g1", "--channel", "c1", "--persona", persona,
                   "--user", "u1", "--summary", "s"))
    ok(stm_cli("memory", "edit", "--dm", "--user", "u1", "--channel", "d1", "--summary", "d"))
    user = ok(stm_cli("--json", "user", "clear", "u1", "--yes")).json()
    assert user["removed"] == 3 and {k["scope_kind"] for k in user["keys"]} == {"user"}
    channel = ok(stm_cli("memory", "clear-channel", "c1", "--yes"))
    assert "Removed 2 memory rows of channel c1" in channel.stdout
    assert ok(stm_cli("--json", "db", "info")).json()["memory_rows"] == 0


def test_user_opt_in(stm_cli: RunStm) -> None:
    ok(stm_cli("db", "upgrade"))
    assert not ok(stm_cli("--json", "user", "opt-in", "show", "u1")).json()["crossserver_opt_in"]
    on = ok(stm_cli("user", "opt-in", "on", "u1"))
    assert "on" in on.stdout
    assert ok(stm_cli("--json", "user", "opt-in", "show", "u1")).json()["crossserver_opt_in"]
    assert not ok(stm_cli("--json", "user", "opt-in", "off", "u1")).json()[
        "crossserver_opt_in"]


async def test_janitor_removes_old_rows(stm_cli: RunStm, db_arg: str) -> None:
    now = SystemClock().now_ms()
    old = now - 100 * 86_400_000  # past the 90-day retention
    await seed(db_arg, [MemoryWrite(key=MemoryKey.server("g1", f"c{i}", None), now_ms=old,
                                    set_summary=True, summary="old") for i in range(3)],
               clock=ManualClock(old))
    await seed(db_arg, [MemoryWrite(key=MemoryKey.server("g1", "fresh", None), now_ms=now,
                                    set_summary=True, summary="new")])
    result = ok(stm_cli("--json", "janitor", "--yes"))
    assert result.json() == {"removed": 3, "retention_days": 90.0, "dry_run": False}
    assert ok(stm_cli("--json", "db", "info")).json()["memory_rows"] == 1
    again = ok(stm_cli("janitor", "--yes"))
    assert "Removed 0 memory rows" in again.stdout


def test_config_export_import_round_trip(stm_cli: RunStm, tmp_path: Path) -> None:
    ok(stm_cli("server", "params", "set", "g1", "--cadence", "3"))
    ok(stm_cli("server", "categories", "set", "g1", "--yes", "--line", "Goals: g"))
    ok(stm_cli("server", "privacy", "set", "g1", "c9"))
    out = tmp_path / "g1.json"
    ok(stm_cli("config", "export", "g1", "-o", str(out)))
    exported = json.loads(out.read_text(encoding="utf-8"))
    assert exported["params"]["refresh_cadence"] == 3

    ok(stm_cli("config", "import", "g2", str(out), "--yes"))
    again = ok(stm_cli("config", "export", "g2")).json()
    assert {k: v for k, v in again.items() if k != "server_id"} == {
        k: v for k, v in exported.items() if k != "server_id"}

    exported["params"]["surprise"] = 1
    out.write_text(json.dumps(exported), encoding="utf-8")
    assert "extra fields found (surprise)" in refused(stm_cli("config", "import", "g3", str(out)))
    out.write_text("{not json", encoding="utf-8")
    assert "not valid JSON" in refused(stm_cli("config", "import", "g3", str(out)))


async def test_capture_seeded_rows_show_in_view(stm_cli: RunStm, db_arg: str) -> None:
    async with open_store(db_arg, load_entrypoints=False) as stm:
        key = MemoryKey.server("g1", "c1", "p1")
        now = stm.clock.now_ms()
        await stm.engine.capture([CaptureWrite(key=key, now_ms=now, counter_increment=4, messages=(
            CrudeMessage(role="user", content="hi", speaker_name="Alice", timestamp_ms=now),))])
    view = ok(stm_cli("--json", "memory", "view", "--server", "g1", "--channel", "c1",
                      "--persona", "p1")).json()
    assert view["exists"] and view["is_empty"] and view["turns_since_refresh"] == 4
