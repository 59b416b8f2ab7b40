"""``Turn.model`` reaches the gates and the phrasing; plugins written before
the parameter existed keep working."""

from __future__ import annotations

import pytest

from stm_core import hookimpl
from stm_core.errors import ValidationError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.store import open_store

NO_TOOLS_MODEL = "o1-mini"


class ModelAware:
    @hookimpl
    def stm_tool_available(self, provider: str, model: str | None) -> bool | None:
        return False if (provider, model) == ("openai", NO_TOOLS_MODEL) else None

    @hookimpl
    def stm_nudge_template(self, model: str | None) -> str | None:
        return f"[System: {model} should call {{short_term_memory_tool}}.]" if model else None

    @hookimpl
    def stm_tool_description(self, provider: str, model: str | None) -> str | None:
        return f"Notes for {model}." if model else None


class WrittenBeforeModels:
    """A plugin that does not know the ``model`` parameter."""

    @hookimpl
    def stm_tool_description(self, provider: str, mode: str) -> str | None:
        return "Old plugin description." if provider == "legacy" else None


def turn(**changes: object) -> Turn:
    values: dict[str, object] = {"user_id": "u1", "channel_id": "c1", "server_id": "g1",
                                 "provider": "openai", "model": "gpt-4o"}
    values.update(changes)
    return Turn(**values)  # type: ignore[arg-type]


async def due_nudge(stm: object, t: Turn) -> str | None:
    ctx = await stm.build_context(t)  # type: ignore[attr-defined]
    return None if ctx.nudge_item is None else str(ctx.nudge_item.text)


async def test_a_gate_can_deny_one_model_of_a_provider(backend_url: str) -> None:
    async with open_store(backend_url, plugins=[ModelAware()], load_entrypoints=False) as stm:
        await stm.admin.set_server_params("g1", refresh_cadence=1)
        await stm.record_turn(turn(), [HistoryMessage(author_type="user", content="hi")],
                              [PersonaResponse(content="hello", persona_name="Bot")])
        # The nudge is due: worded for the model, and absent where the model has no tools.
        assert await due_nudge(stm, turn(model="gpt-4o")) == (
            "[System: gpt-4o should call `update_short_term_memory`.]")
        assert await due_nudge(stm, turn(model="gpt-4.1")) == (
            "[System: gpt-4.1 should call `update_short_term_memory`.]")
        assert await due_nudge(stm, turn(model=NO_TOOLS_MODEL)) is None
        assert await stm.tool_schema(turn(model=NO_TOOLS_MODEL)) is None
        assert await stm.tool_schema(turn(model="gpt-4o")) is not None
        assert await stm.tool_available(turn(model=NO_TOOLS_MODEL)) is False
        result = await stm.apply_tool_call(turn(model=NO_TOOLS_MODEL), {"summary": "x"})
        assert result.code == "unavailable"


async def test_phrasing_follows_the_model_on_one_server(backend_url: str) -> None:
    async with open_store(backend_url, plugins=[ModelAware()], load_entrypoints=False) as stm:
        four = await stm.tool_schema(turn(model="gpt-4o"))
        mini = await stm.tool_schema(turn(model="gpt-4o-mini"))
        unnamed = await stm.tool_schema(turn(model=None))
        assert four is not None and mini is not None and unnamed is not None
        assert four["function"]["description"] == "Notes for gpt-4o."
        assert mini["function"]["description"] == "Notes for gpt-4o-mini."
        assert unnamed["function"]["description"].startswith("Update your short-term")


async def test_plugins_without_the_model_parameter_keep_working(backend_url: str) -> None:
    async with open_store(backend_url, plugins=[WrittenBeforeModels()],
                          load_entrypoints=False) as stm:
        schema = await stm.tool_schema(turn(provider="legacy", model="x-1"), "openai")
        assert schema is not None
        assert schema["function"]["description"] == "Old plugin description."


@pytest.mark.parametrize("bad", [4, b"gpt-4o", ["gpt-4o"], 1.5])
def test_a_model_that_is_not_text_is_a_validation_error(bad: object) -> None:
    with pytest.raises(ValidationError) as caught:
        turn(model=bad)
    assert caught.value.field == "model"
