"""The JSON of a user's privacy requests (docs/admin.md, forget_user and export_user)."""

from __future__ import annotations

import json
from typing import Any

from stm_core._util.clock import ManualClock
from stm_core.admin.user_data import iso_time
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.testing.conformance import authored
from tests.conftest import OpenStm

X = "4242"
OWN = {"scope_kind": "user", "server_id": "", "user_id": X, "channel_id": "dm", "persona_id": ""}
SHARED = {"scope_kind": "server", "server_id": "g1", "user_id": "", "channel_id": "c1",
          "persona_id": "p"}


async def seed(stm: Any) -> None:
    await stm.admin.edit_memory(channel_id="dm", user_id=X, summary="my own memory")
    await stm.admin.set_user_opt_in(X, opt_in=True)
    await stm.engine.capture([CaptureWrite(key=MemoryKey.server("g1", "c1", "p"),
                                    now_ms=stm.clock.now_ms(),
                                    messages=authored(("someone", "hi"), (X, "x-secret"),
                                                      (None, "whose is this?")))])


async def test_forget_result_json(open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        await seed(stm)
        for dry_run in (True, False):
            data = (await stm.admin.forget_user(X, dry_run=dry_run)).to_dict()
            assert json.loads(json.dumps(data)) == {
                "user_id": X, "dry_run": dry_run, "rows_removed": [OWN],
                "rows_changed": [SHARED], "lines_removed": 1, "preferences_removed": True,
                "mentions": {"action": "cleared",
                             "searched_for": {"names": [], "ids": [X, f"<@{X}>", f"<@!{X}>"],
                                              "names_not_searched": []},
                             "memories_cleared": [], "lines_removed": 0},
                "unchecked_lines": 1, "unchecked_rows": [SHARED]}


async def test_export_json_holds_own_rows_whole_and_only_the_users_lines_elsewhere(
        open_stm: OpenStm, clock: ManualClock) -> None:
    async with open_stm("memory://") as stm:
        await seed(stm)
        data = await stm.admin.export_user(X)
    now = clock.now_ms()
    assert json.loads(json.dumps(data)) == data
    stamp = "2026-01-01T00:00:00.000Z"  # the test clock's start
    assert iso_time(now) == stamp
    assert (data["user_id"], data["exported_at_ms"], data["exported_at"],
            data["preferences"]) == (X, now, stamp, {"crossserver_opt_in": True})
    [own] = data["own_rows"]
    assert own == {"key": OWN, "messages": [], "lines_not_exported": 0, "updated_at_ms": now,
                   "updated_at": stamp, "summary": "my own memory", "categories": {},
                   "revisions": [{"rev": 1, "summary": "my own memory", "categories": {},
                                  "author": "admin", "actor": None, "written_at_ms": now,
                                  "written_at": stamp}],
                   "parent_channel_id": None, "persona_lineage_id": None,
                   "turns_since_refresh": 0}
    [other] = data["lines_in_other_rows"]
    assert other["key"] == SHARED and other["updated_at_ms"] == now
    assert [(m["author_id"], m["content"]) for m in other["messages"]] == [(X, "x-secret")]
    assert [m["time"] == iso_time(m["timestamp_ms"]) for m in other["messages"]] == [True]
    # The line without an author is counted, not exported: it may be anyone's.
    assert (data["unchecked_lines"], data["unchecked_rows"]) == (1, [SHARED])
    assert set(other) == {"key", "messages", "updated_at_ms", "updated_at"}  # nothing else
    assert data["mentions"] == []
