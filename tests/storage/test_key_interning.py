"""The keys of a turn's rows are handed out again, not built again."""

from __future__ import annotations

import attrs

from stm_core.storage import records
from stm_core.storage.records import MemoryKey


def test_the_same_fields_give_the_same_key_object() -> None:
    a = MemoryKey.server("9", "1", "7")
    assert MemoryKey.server("9", "1", "7") is a
    assert MemoryKey.server("9", "1", None) is not a
    assert MemoryKey.server("9", "1", None) == MemoryKey(
        scope_kind="server", server_id="9", user_id="", channel_id="1", persona_id="")
    user = MemoryKey.user("42", "1", "7", "9")
    assert MemoryKey.user("42", "1", "7", "9") is user
    assert user == MemoryKey(scope_kind="user", server_id="9", user_id="42", channel_id="1",
                             persona_id="7")
    assert MemoryKey.user("42", "1", None, None).server_id == records.DM_SERVER


def test_a_subclass_gets_keys_of_its_own_class() -> None:
    @attrs.frozen(kw_only=True)
    class Tagged(MemoryKey):
        pass

    plain = MemoryKey.server("9", "1", "7")
    tagged = Tagged.server("9", "1", "7")
    assert type(tagged) is Tagged
    assert type(MemoryKey.server("9", "1", "7")) is MemoryKey
    assert MemoryKey.server("9", "1", "7") is plain


def test_the_table_of_keys_is_bounded() -> None:
    for n in range(records.KEYS_REMEMBERED * 2):
        MemoryKey.server("9", str(n), None)
    assert len(records._KEYS) <= records.KEYS_REMEMBERED
