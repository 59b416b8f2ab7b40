"""Every built-in tool declaration checked with the provider SDK's own types
and schema helpers, then sent through the SDK's request building offline."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import openai
import pydantic
import pytest
from anthropic.types import ToolParam
from google.genai import types as genai_types
from openai.lib._pydantic import _ensure_strict_json_schema
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam

from stm_core.models import Turn
from stm_core.storage.records import CategoryRecord
from stm_core.store import Stm, open_store
from stm_core.tool import TOOL_NAME
from tests.sdk.wire import send_anthropic, send_chat, send_gemini, send_responses

CATEGORIES = [("Goals", "What the party is after"), ("HP/MP", "Hit points")]
TURN = Turn(user_id="u1", channel_id="c1", server_id="g1", provider="openai", model="gpt-4o")


@pytest.fixture(params=["summary", "category"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Stm]:
    async with open_store("memory://", load_entrypoints=False) as stm:
        if request.param == "category":
            records = [CategoryRecord(position=i, label=label, description=text)
                       for i, (label, text) in enumerate(CATEGORIES)]
            await stm.engine.write_categories("g1", lambda: stm.adapter.replace_categories(
                "g1", records, now_ms=0, clear_server_memories=False))
        yield stm


async def declaration(stm: Stm, format: str) -> dict[str, Any]:
    schema = await stm.tool_schema(TURN, format)
    assert schema is not None
    return schema


def check_typed_dict(value: dict[str, Any], typed: Any) -> None:
    """Valid for the SDK's TypedDict: values of the right types, no unknown key."""
    pydantic.TypeAdapter(typed).validate_python(value)
    keys = typed.__required_keys__ | typed.__optional_keys__
    assert set(value) <= keys, set(value) - keys


def check_strict(parameters: dict[str, Any]) -> None:
    """OpenAI's own strict-schema pass leaves a strict schema unchanged."""
    assert _ensure_strict_json_schema(copy.deepcopy(parameters), path=(),
                                      root=parameters) == parameters
    assert parameters["additionalProperties"] is False
    assert parameters["required"] == list(parameters["properties"])


async def test_chat_completions(store: Stm) -> None:
    schema = await declaration(store, "openai")
    check_typed_dict(schema, ChatCompletionToolParam)
    assert send_chat([{"role": "user", "content": "hi"}], [schema])["tools"] == [schema]


async def test_chat_completions_strict(store: Stm) -> None:
    schema = await declaration(store, "openai-strict")
    check_typed_dict(schema, ChatCompletionToolParam)
    assert schema["function"]["strict"] is True
    check_strict(schema["function"]["parameters"])
    assert send_chat([{"role": "user", "content": "hi"}], [schema])["tools"] == [schema]


async def test_strict_matches_the_sdks_pydantic_helper(store: Stm) -> None:
    schema = await declaration(store, "openai-strict")
    params = schema["function"]["parameters"]
    # Category fields may be left out (one is enough); the summary is always needed.
    optional = (await store.engine.profile_for("g1")).mode == "category"
    fields = {name: (str | None if optional else str,
                     pydantic.Field(description=p["description"]))
              for name, p in params["properties"].items()}
    model = pydantic.create_model("Args", **fields)  # type: ignore[call-overload]
    helper = openai.pydantic_function_tool(model, name=TOOL_NAME,
                                           description=schema["function"]["description"])
    expected = helper["function"]["parameters"]
    assert expected["required"] == params["required"]
    assert expected["additionalProperties"] is False
    for name, prop in params["properties"].items():
        theirs = expected["properties"][name]
        types = {t["type"] for t in theirs["anyOf"]} if "anyOf" in theirs else {theirs["type"]}
        ours = set(prop["type"]) if isinstance(prop["type"], list) else {prop["type"]}
        assert ours == types and theirs["description"] == prop["description"]


async def test_responses(store: Stm) -> None:
    for key, strict in (("openai-responses", False), ("openai-responses-strict", True)):
        schema = await declaration(store, key)
        check_typed_dict(schema, FunctionToolParam)
        assert schema["strict"] is strict and schema["name"] == TOOL_NAME
        if strict:
            check_strict(schema["parameters"])
        assert send_responses([{"role": "user", "content": "hi"}], [schema])["tools"] == [schema]


async def test_anthropic(store: Stm) -> None:
    schema = await declaration(store, "anthropic")
    check_typed_dict(schema, ToolParam)
    assert send_anthropic([{"role": "user", "content": "hi"}], [schema])["tools"] == [schema]


async def test_gemini(store: Stm) -> None:
    schema = await declaration(store, "gemini")
    # The SDK's pydantic model refuses unknown fields.
    declared = genai_types.FunctionDeclaration.model_validate(schema)
    assert declared.name == TOOL_NAME
    body = send_gemini([{"role": "user", "parts": [{"text": "hi"}]}], [schema])
    [sent] = body["tools"][0]["functionDeclarations"]
    assert sent["name"] == TOOL_NAME
    assert list(sent["parameters"]["properties"]) == list(schema["parameters"]["properties"])
