"""Every public entry point, every argument, every wrong type: a ValidationError.

A table built from the signatures themselves (so a new admin method or
argument is tried without editing this file): each argument of each public
``stm.admin`` method, each per-turn ``Stm`` call and each field of ``Turn``,
``HistoryMessage`` and ``PersonaResponse`` gets values of the wrong type
(``None`` where not allowed, bools, numbers, bytes, single strings where a
list is needed, dicts where a message is needed, lists of the wrong items).
Each must raise ``ValidationError`` naming that argument, on memory, SQLite
and PostgreSQL, and leave the database exactly as it was.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Coroutine
from typing import Any

import attrs
import pytest

from stm_core.admin import Admin
from stm_core.admin.argument_types import kind_of
from stm_core.errors import ValidationError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.storage.records import MemoryFilter
from stm_core.store import Stm, open_store
from tests.conftest import OpenStm

from .support import add_figure

SERVER = "g1"
#: Wrong values per kind of argument (``None`` is added where not allowed).
WRONG: dict[str, list[Any]] = {
    "flag": [1, 0, "yes", "true", 1.0],
    "int": [True, 1.5, "1", b"1", [1], float("nan")],
    "id": [True, False, 1.5, b"g1", ["g1"], {"id": "g1"}, object()],
    "text": [5, True, b"text", ["text"], {"text": "x"}],
    "ids": ["c1", b"c1", 5, {"c1": "x"}, [None], [True], [1.5], [["c1"]]],
    "texts": ["refresh_cadence", 5, b"x", [5], [None]],
    "text_or_texts": [5, b"A: b", {"A": "b"}, [5], [None], [b"A: b"]],
    "text_mapping": [5, "summary", ["summary"], {"summary": 5}, {5: "x"}],
}
#: A valid value per kind, so only the argument under test is wrong.
VALID: dict[str, Any] = {"flag": True, "int": 1, "id": "c1", "text": "text", "ids": ["c1"],
                         "texts": ["refresh_cadence"], "text_or_texts": ["Goals: g"],
                         "text_mapping": {"summary": "x"}}
#: Valid values the kinds cannot give (per method and argument).
SPECIAL: dict[tuple[str, str], Any] = {("edit_memory", "categories"): None,
                                       ("edit_memory", "summary"): "a summary"}


def admin_methods() -> list[tuple[str, Callable[..., Any]]]:
    # Names are ASCII: mutation testing adds copies of each method under names
    # with a non-ASCII separator, which are not part of the API.
    methods = [(name, member) for name, member in vars(Admin).items()
               if not name.startswith("_") and name.isascii()
               and inspect.iscoroutinefunction(member)]
    assert len(methods) >= 20  # every method of the admin API is tried
    return sorted(methods)


def parameters(method: Callable[..., Any]) -> dict[str, tuple[str | None, bool, bool]]:
    """name -> (kind, None allowed, has a default) of each argument but ``self``."""
    original = inspect.unwrap(method)
    hints = typing.get_type_hints(original)
    found = {}
    for name, param in list(inspect.signature(original).parameters.items())[1:]:
        kind, optional = kind_of(name, hints[name])
        found[name] = (kind, optional, param.default is not inspect.Parameter.empty)
    return found


def admin_cases() -> list[tuple[str, str, Any]]:
    cases = []
    for method_name, method in admin_methods():
        for name, (kind, optional, _) in parameters(method).items():
            if kind is None:
                continue
            for wrong in WRONG[kind] + ([] if optional else [None]):
                cases.append((method_name, name, wrong))
    return cases


def valid_arguments(stm: Stm, method_name: str, document: dict[str, Any]) -> dict[str, Any]:
    method = getattr(Admin, method_name)
    arguments: dict[str, Any] = {}
    for name, (kind, _optional, has_default) in parameters(method).items():
        if (method_name, name) in SPECIAL:
            arguments[name] = SPECIAL[method_name, name]
        elif name == "server_id":
            arguments[name] = SERVER
        elif name == "data":
            arguments[name] = document
        elif not has_default:
            if kind is None:
                pytest.fail(f"no valid value for {method_name}({name}=...): add it to SPECIAL")
            arguments[name] = VALID[kind]
    return arguments


async def database_state(stm: Stm) -> list[Any]:
    settings = await stm.adapter.load_server_settings(SERVER)
    prefs = await stm.adapter.load_user_prefs("c1")
    rows = [row for scope in ("server", "user")
            for row in await stm.adapter.list_memories(MemoryFilter(scope_kind=scope))]
    return [settings, prefs, sorted(rows, key=repr)]


async def test_admin_arguments_of_the_wrong_type(open_stm: OpenStm, backend_url: str,
                                                 figures: dict[str, Any]) -> None:
    cases = admin_cases()
    async with open_stm(backend_url) as stm:
        await stm.admin.set_private_channels(SERVER, channel_ids=["c9"])
        await stm.admin.set_prompts(SERVER, nudge="kept")
        document = await stm.admin.export_config(SERVER)
        before = await database_state(stm)
        for method_name, name, wrong in cases:
            arguments = valid_arguments(stm, method_name, document)
            arguments[name] = wrong
            call = getattr(stm.admin, method_name)
            with pytest.raises(ValidationError) as info:
                await call(**arguments)
            assert info.value.field is not None and info.value.field.startswith(name), \
                (method_name, name, wrong, info.value)
        assert await database_state(stm) == before
    assert len(cases) > 200
    add_figure(figures, "argument_cases", len(cases))


async def test_int_ids_reach_admin_calls_as_strings(stm: Stm) -> None:
    shown = await stm.admin.set_private_channels(7, channel_ids=[1001, "1002"])  # type: ignore[arg-type]
    assert shown.server_id == "7" and shown.private_channel_ids == ("1001", "1002")
    assert (await stm.admin.privacy("7")).private_channel_ids == ("1001", "1002")


# -- the per-turn calls ------------------------------------------------------------------
TURN = Turn(user_id="u1", channel_id="c1", server_id=SERVER)
HISTORY = [HistoryMessage(author_type="user", content="hello", speaker_name="Ann")]
REPLIES = [PersonaResponse(content="hi", persona_name="Bot", persona_id="p1")]
NOT_A_TURN: list[Any] = [None, "c1", {"user_id": "u1", "channel_id": "c1"}, 5,
                         attrs.asdict(TURN)]

TurnCall = Callable[[Stm, Any], Coroutine[Any, Any, Any]]


def turn_calls() -> list[tuple[str, str, Any, TurnCall]]:
    """(call, argument, wrong value, how to make the call with it)."""
    cases: list[tuple[str, str, Any, TurnCall]] = []
    for bad in NOT_A_TURN:
        cases += [
            ("build_context", "turn", bad, lambda stm, v: stm.build_context(v)),
            ("tool_available", "turn", bad, lambda stm, v: stm.tool_available(v)),
            ("tool_schema", "turn", bad, lambda stm, v: stm.tool_schema(v)),
            ("apply_tool_call", "turn", bad,
             lambda stm, v: stm.apply_tool_call(v, {"summary": "x"})),
            ("record_turn", "turn", bad, lambda stm, v: stm.record_turn(v, HISTORY, REPLIES)),
        ]
    for bad in [None, "hello", {"author_type": "user", "content": "x"},
                [{"author_type": "user", "content": "x"}], [("user", "x")], [None],
                [REPLIES[0]]]:
        cases.append(("record_turn", "history", bad,
                      lambda stm, v: stm.record_turn(TURN, v, REPLIES)))
    for bad in [None, "hi", [{"content": "hi", "persona_name": "Bot"}], [HISTORY[0]]]:
        cases.append(("record_turn", "responses", bad,
                      lambda stm, v: stm.record_turn(TURN, HISTORY, v)))
    for name in ("stop_response", "privacy_full"):
        for bad in [1, "yes", None]:
            cases.append(("record_turn", name, bad,
                          lambda stm, v, name=name: stm.record_turn(TURN, HISTORY, REPLIES,
                                                                    **{name: v})))
    for bad in [5, b"openai", ["openai"]]:
        cases.append(("tool_schema", "format", bad, lambda stm, v: stm.tool_schema(TURN, v)))
    return cases


async def test_turn_calls_refuse_wrong_types(open_stm: OpenStm, backend_url: str,
                                             figures: dict[str, Any]) -> None:
    cases = turn_calls()
    async with open_stm(backend_url) as stm:
        before = await database_state(stm)
        for call_name, name, wrong, call in cases:
            with pytest.raises(ValidationError) as info:
                await call(stm, wrong)
            assert info.value.field == name, (call_name, name, wrong, info.value)
        assert await database_state(stm) == before
        # The same calls with the right types still work.
        assert (await stm.record_turn(TURN, HISTORY, REPLIES)).recorded
    add_figure(figures, "argument_cases", len(cases))


@pytest.mark.parametrize(("argument", "wrong"), [
    ("url", 5), ("url", b"memory://"), ("url", ["memory://"]),
    ("settings", {"ttl_hours": 1}), ("settings", "memory://"),
    ("plugins", 5), ("plugins", "stm_acme"), ("plugins", None)])
async def test_open_store_refuses_wrong_types(argument: str, wrong: Any,
                                              figures: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"url": "memory://", "load_entrypoints": False,
                                 argument: wrong}
    with pytest.raises(ValidationError) as info:
        async with open_store(**arguments):
            pass
    assert info.value.field == argument
    add_figure(figures, "argument_cases", 1)


# -- the values a host builds --------------------------------------------------------------
VALUE_FIELDS: dict[type, dict[str, list[Any]]] = {
    Turn: {
        "user_id": [True, 1.5, b"u", ["u"]],
        "channel_id": [None, True, 1.5, b"c", ("c",)],
        "server_id": [False, 7.0, b"g", {"g": 1}],
        "parent_channel_id": [True, 1.5],
        "persona_id": [True, 1.5, ["p"]],
        "persona_lineage_id": [True, 1.5],
        "bot_name": [None, 5, b"Bot"],
        "triggerer_name": [None, 5],
        "provider": [None, 5, ["openai"]],
        "model": [5, b"gpt-4o", ["gpt-4o"]],
        "has_tools": [None, 1, "yes"],
        "personal_memories_enabled": [0, "no"],
        "is_user_impersonation": [1, None],
        "explicit_long_term_intent": [1, "true"],
        "stm_update_disabled": [1, None],
        "server_name": [5, b"x"],
        "channel_name": [5, ["x"]],
        "user_names": [5, "ann", ["ann"], {True: "Ann"}, {"1": 5}, {"1": None}],
        "channel_names": [5, {1.5: "x"}],
        "role_names": ["x", {"1": b"x"}],
        "thread_ids": [None, "t1", 5, [True], [None]],
    },
    HistoryMessage: {"author_type": ["bot", None, 5, "USER"], "content": [None, 5, b"x"],
                     "author_id": [True, 1.5, b"u", ["u"]],
                     "speaker_name": [5, b"x"], "is_trigger": [None, 1, "yes"]},
    PersonaResponse: {"content": [None, 5], "persona_name": [None, 5],
                      "persona_id": [True, 1.5], "persona_lineage_id": [False, 1.5]},
}
BASE: dict[type, dict[str, Any]] = {
    Turn: {"user_id": "u1", "channel_id": "c1"},
    HistoryMessage: {"author_type": "user", "content": "x"},
    PersonaResponse: {"content": "x", "persona_name": "Bot"},
}


def value_cases() -> list[tuple[type, str, Any]]:
    for cls, fields in VALUE_FIELDS.items():  # every field is tried
        assert set(fields) == set(attrs.fields_dict(cls)), cls
    return [(cls, name, bad) for cls, fields in VALUE_FIELDS.items()
            for name, values in fields.items() for bad in values]


@pytest.mark.parametrize(("cls", "name", "wrong"), value_cases(),
                         ids=lambda v: v.__name__ if isinstance(v, type) else repr(v)[:20])
def test_values_refuse_wrong_field_types(cls: type, name: str, wrong: Any,
                                         figures: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as info:
        cls(**{**BASE[cls], name: wrong})
    assert info.value.field is not None and info.value.field.startswith(name)
    add_figure(figures, "argument_cases", 1)


#: Ids of the right type but the wrong shape (docs/admin.md: non-empty, at most
#: 128 characters, no whitespace).
MALFORMED_IDS = ["", "a b", "x" * 129, "tab\there", "nul\x00"]


def malformed_id_cases() -> list[tuple[str, str, Any]]:
    cases: list[tuple[str, str, Any]] = []
    for method_name, method in admin_methods():
        for name, (kind, _, _) in parameters(method).items():
            if kind == "id" and name != "persona_id":  # "" is the persona-less memory
                cases += [(method_name, name, bad) for bad in MALFORMED_IDS]
            elif kind == "ids":
                cases += [(method_name, name, ["c1", bad]) for bad in MALFORMED_IDS]
    return cases


async def test_malformed_ids_are_refused_naming_the_argument(open_stm: OpenStm) -> None:
    cases = malformed_id_cases()
    async with open_stm("memory://") as stm:
        document = await stm.admin.export_config(SERVER)
        before = await database_state(stm)
        for method_name, name, bad in cases:
            arguments = valid_arguments(stm, method_name, document)
            arguments[name] = bad
            with pytest.raises(ValidationError) as info:
                await getattr(stm.admin, method_name)(**arguments)
            assert info.value.field == name, (method_name, name, bad, info.value)
        assert await database_state(stm) == before
    assert len(cases) > 100
