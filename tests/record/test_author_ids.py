"""Every stored user line should say who wrote it, or erasure cannot find it.

stm attributes the line the host marks as the trigger (``is_trigger``) to
``turn.user_id`` when the host passed no ``author_id``; it never guesses an
author for any other line. A user line stored without an id warns once per
process, or is refused under ``require_author_ids``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from stm_core.errors import ConfigurationError, UnattributedLineWarning, ValidationError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.pipeline import record
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm

U = "42"
KEY = MemoryKey.server("7", "1001", "1")


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts as a process that has not warned yet."""
    monkeypatch.setattr(record, "_unattributed_warned", False)
    yield


def turn(**fields: Any) -> Turn:
    fields = {"user_id": U, "channel_id": "1001", "server_id": "7", "persona_id": "1",
              "triggerer_name": "Alice", **fields}
    return Turn(**fields)


def said(text: str, speaker: str | None = "Alice", author_id: str | None = None,
         author_type: str = "user", trigger: bool = False) -> HistoryMessage:
    return HistoryMessage(author_type=author_type, content=text,  # type: ignore[arg-type]
                          speaker_name=speaker, author_id=author_id, is_trigger=trigger)


REPLY = [PersonaResponse(content="Teal it is!", persona_name="Tomori", persona_id="1")]


async def authors(stm: Stm, key: MemoryKey = KEY) -> list[tuple[str, str | None]]:
    row = await stm.adapter.get_memory(key)
    assert row is not None
    return [(m.content, m.author_id) for m in row.messages]


async def record_quietly(stm: Stm, t: Turn, history: list[HistoryMessage]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnattributedLineWarning)
        assert (await stm.record_turn(t, history, REPLY)).recorded


async def test_the_marked_trigger_is_the_turns_user(stm: Stm) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnattributedLineWarning)  # nothing left to warn about
        await stm.record_turn(turn(), [said("Shall we paint the sky teal?", trigger=True)],
                              REPLY)
    assert await authors(stm) == [("Shall we paint the sky teal?", U), ("Teal it is!", None)]
    own = MemoryKey.user(U, "1001", "1", "7")
    assert (await authors(stm, own))[0] == ("Shall we paint the sky teal?", U)


async def test_a_marked_dm_trigger_without_a_speaker_name_is_the_users(stm: Stm) -> None:
    await record_quietly(stm, turn(server_id=None), [said("psst", speaker=None, trigger=True)])
    assert (await authors(stm, MemoryKey.user(U, "1001", "1", None)))[0] == ("psst", U)


async def test_the_mark_is_followed_wherever_the_line_is(stm: Stm) -> None:
    """Another user's line arrived after the trigger: the mark, not the position, counts."""
    await record_quietly(stm, turn(), [said("hi", trigger=True), said("me too", speaker="Bob"),
                                       said("[joined]", author_type="other")])
    assert (await authors(stm))[:2] == [("hi", U), ("me too", None)]


@pytest.mark.parametrize(("case", "t", "history"), [
    ("no line is marked, even the newest by the triggerer's name", turn(), [said("hi")]),
    ("no line is marked, no speaker name", turn(), [said("hi", speaker=None)]),
    ("no line is marked, the default name", turn(triggerer_name="User"),
     [said("hi", speaker="User")]),
    ("an impersonation turn", turn(is_user_impersonation=True), [said("hi", trigger=True)]),
    ("the marked line is the bot's", turn(),
     [said("hi"), said("earlier reply", speaker="Tomori", author_type="persona",
                       trigger=True)]),
    ("nobody triggered", turn(user_id=None), [said("hi", trigger=True)]),
])
async def test_no_other_line_is_attributed(
        stm: Stm, case: str, t: Turn, history: list[HistoryMessage]) -> None:
    await record_quietly(stm, t, history)
    assert ("hi", None) in await authors(stm), case


async def test_an_author_the_host_gave_is_kept_even_on_the_trigger(stm: Stm) -> None:
    """The host knows who wrote the line; the mark only fills a missing id."""
    await record_quietly(stm, turn(), [said("hi", author_id="99", trigger=True)])
    assert (await authors(stm))[0] == ("hi", "99")


async def test_two_marked_lines_are_refused_and_nothing_is_written(stm: Stm) -> None:
    with pytest.raises(ValidationError, match="both marked is_trigger") as info:
        await stm.record_turn(turn(), [said("a", trigger=True), said("b", trigger=True)],
                              REPLY)
    assert info.value.field == "is_trigger"
    assert await stm.adapter.get_memory(KEY) is None


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_the_mark_takes_a_bool_only(value: object) -> None:
    with pytest.raises(ValidationError):
        HistoryMessage(author_type="user", content="hi", is_trigger=value)  # type: ignore[arg-type]


async def test_earlier_lines_without_an_author_warn_once_per_process(stm: Stm) -> None:
    history = [said("from Bob", speaker="Bob"), said("Shall we paint the sky teal?")]
    with pytest.warns(UnattributedLineWarning) as caught:
        await stm.record_turn(turn(), history, REPLY)
        await stm.record_turn(turn(channel_id="1002"), history, REPLY)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "without an author id" in message and "stm user forget" in message
    assert "STM_REQUIRE_AUTHOR_IDS" in message


async def test_a_strict_store_refuses_the_turn_and_writes_nothing(open_stm: Any,
                                                                  backend_url: str) -> None:
    async with open_stm(backend_url, settings=Settings(require_author_ids=True)) as stm:
        # The marked trigger alone is attributed by stm: accepted.
        await stm.record_turn(turn(channel_id="1002"), [said("hi", trigger=True)], REPLY)
        with pytest.raises(ValidationError, match="no author_id") as info:
            await stm.record_turn(turn(), [said("from Bob", speaker="Bob"),
                                           said("hi", trigger=True)], REPLY)
        assert info.value.field == "author_id"
        assert await stm.adapter.get_memory(KEY) is None


@pytest.mark.parametrize("text", ["maybe", "2", "strict"])
def test_the_strict_variable_takes_a_flag_only(text: str) -> None:
    with pytest.raises(ConfigurationError, match=f"^STM_REQUIRE_AUTHOR_IDS={text!r}"):
        Settings.from_env({"STM_REQUIRE_AUTHOR_IDS": text})
    assert Settings.from_env({"STM_REQUIRE_AUTHOR_IDS": "on"}).require_author_ids


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_the_strict_setting_takes_a_bool_only(value: object) -> None:
    with pytest.raises(ConfigurationError, match=r"^STM_REQUIRE_AUTHOR_IDS="):
        Settings(require_author_ids=value)  # type: ignore[arg-type]


async def test_forget_after_the_readme_flow_leaves_no_line_of_the_user(stm: Stm) -> None:
    """The README's host flow (no author ids), then forget: on memory, SQLite
    and PostgreSQL alike."""
    alice = "Shall we paint the sky teal?"
    await stm.apply_tool_call(turn(), {"summary": "Alice wants a teal sky."})
    await stm.record_turn(turn(), [said(alice, trigger=True)], REPLY)
    result = await stm.admin.forget_user(U)
    assert (result.rows_removed, result.rows_changed) == ((MemoryKey.user(U, "1001", "1", "7"),),
                                                          (KEY,))
    assert (result.lines_removed, result.unchecked_lines) == (1, 0)
    assert await authors(stm) == [("Teal it is!", None)]
