"""The JSON of a memory's history and of a restore (docs/admin.md, memory_history)."""

from __future__ import annotations

import json
from typing import Any

from stm_core._util.clock import ManualClock
from stm_core.plugin_types import Actor
from tests.conftest import OpenStm

WHERE: dict[str, Any] = {"server_id": "g1", "channel_id": "c1", "persona_id": "p1"}
KEY = {"scope_kind": "server", "server_id": "g1", "user_id": "", "channel_id": "c1",
       "persona_id": "p1"}


async def test_history_json_gives_each_revision_its_author_text_and_diff(
        open_stm: OpenStm, clock: ManualClock) -> None:
    async with open_stm("memory://") as stm:
        await stm.admin.set_categories("g1", ["Goals: g", "Mood: m"])
        first = clock.now_ms()
        await stm.admin.edit_memory(**WHERE, categories={"goals": "find the bell"})
        clock.advance(minutes=1)
        await stm.admin.edit_memory(**WHERE, categories={"goals": "ring it", "mood": "tense"},
                                    actor=Actor(user_id="mod", can_manage=True))
        view = (await stm.admin.memory_history(**WHERE)).to_dict()
        assert json.loads(json.dumps(view)) == view
        [newest, older] = view["revisions"]
        assert view == {"key": KEY, "current_text": "goals: ring it\nmood: tense",
                        "limit": stm.settings.memory_history_revisions,
                        "revisions": [newest, older]}
        assert newest == {"rev": newest["rev"], "author": "admin", "actor": "mod",
                          "restored_from": None, "written_at_ms": clock.now_ms(),
                          "text": "goals: ring it\nmood: tense", "is_current": True,
                          "diff": []}
        assert older == {"rev": older["rev"], "author": "admin", "actor": None,
                         "restored_from": None, "written_at_ms": first,
                         "text": "goals: find the bell", "is_current": False,
                         "diff": ["--- current", f"+++ revision {older['rev']}",
                                  "@@ -1,2 +1 @@", "-goals: ring it", "-mood: tense",
                                  "+goals: find the bell"]}
        assert newest["rev"] > older["rev"]

        restore = (await stm.admin.undo_memory(**WHERE)).to_dict()
        assert (restore["restored_from"], set(restore)) == (older["rev"],
                                                            {"snapshot", "restored_from", "rev"})
        assert restore["snapshot"]["text"] == "Goals:\nfind the bell"
        again = (await stm.admin.memory_history(**WHERE)).to_dict()["revisions"][0]
        assert (again["rev"], again["restored_from"], again["author"]) == (
            restore["rev"], older["rev"], "admin")
