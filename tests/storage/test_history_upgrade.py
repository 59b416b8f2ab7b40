"""Schema version 2 (memory revisions, cache policy) applied to a version-1
database that holds data: nothing is lost and the new parts work at once."""

from __future__ import annotations

from stm_core.storage.records import MemoryWrite, RevisionNote
from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS

from .helpers import turn
from .test_migrations import adapter_for, fetch


async def test_a_version_1_database_upgrades_in_place(db_url: str) -> None:
    v1 = adapter_for(db_url, MIGRATIONS[:1])
    await v1.setup()
    written = await v1.capture(turn("c1", texts=("kept across the upgrade",)))
    await v1.aclose()
    # Version-1 settings rows, as that version's code wrote them.
    await fetch(db_url, "INSERT INTO stm_server_settings (server_id, refresh_cadence, "
                        "private_channel_ids, privacy_bypass, updated_at_ms, created_at_ms) "
                        "VALUES ('g1', 3, '[]', FALSE, 1, 1)")

    current = adapter_for(db_url)
    try:
        status = await current.setup()
        assert (status.from_version, status.to_version, status.created) == (
            1, MIGRATIONS[-1].version, False)
        for record in written:
            assert await current.get_memory(record.key) == record
        settings = await current.load_server_settings("g1")
        assert (settings.refresh_cadence, settings.cache_policy) == (3, None)
        stored = await current.update_server_settings("g1", {"cache_policy": "stable"},
                                                      now_ms=2)
        assert stored.cache_policy == "stable" and stored.refresh_cadence == 3
        key = written[0].key
        [after] = await current.write_memory([MemoryWrite(
            key=key, now_ms=3, set_summary=True, summary="first summary",
            revision=RevisionNote(author="model"))])
        [revision] = await current.list_revisions(key)
        assert (revision.rev, revision.summary) == (after.rev, "first summary")
        assert await fetch(db_url, "SELECT version FROM stm_schema_version ORDER BY version") == [
            (step.version,) for step in MIGRATIONS]
    finally:
        await current.aclose()
