"""The scripted model reads any built-in tool format and writes what it knows."""

from __future__ import annotations

import pytest

from stm_core.cli.demo.model import ScriptedModel, digest, memory_arguments, schema_properties
from stm_core.cli.demo.results import SpokenLine
from stm_core.plugin_types import ToolSchema
from stm_plugins.tool_formats import anthropic, gemini, neutral, openai

SCHEMA = ToolSchema(name="update_short_term_memory", description="d",
                    properties=(("goals", "g"), ("party_status", "p")), mode="category")
RECENT = [SpokenLine(speaker="Mira", text="We go down. Carefully."),
          SpokenLine(speaker="Tomori", text="The stairs are wet.")]


@pytest.mark.parametrize("render", [openai, anthropic, gemini, neutral])
def test_schema_properties_reads_every_builtin_format(render: object) -> None:
    assert callable(render)
    assert schema_properties(render(SCHEMA)) == ("goals", "party_status")


def test_notes_fill_the_declared_arguments_only() -> None:
    notes = {"goals": "Find the bell", "party_status": "ok", "summary": "not asked for"}
    assert memory_arguments(("goals", "party_status"), notes, RECENT) == {
        "goals": "Find the bell", "party_status": "ok"}


def test_without_notes_the_first_argument_gets_a_digest() -> None:
    args = memory_arguments(("summary",), {}, RECENT)
    assert args == {"summary": "Mira: We go down. / Tomori: The stairs are wet."}
    assert digest(RECENT) == args["summary"]


def test_the_model_calls_the_tool_only_when_nudged_and_offered() -> None:
    model = ScriptedModel()
    tool = openai(SCHEMA)
    calm = model.answer(channel_key="c", reply="hi", notes={"goals": "x"}, nudged=False,
                        tool=tool, recent=RECENT)
    assert calm.tool_arguments is None
    no_tool = model.answer(channel_key="c", reply="hi", notes={}, nudged=True, tool=None,
                           recent=RECENT)
    assert no_tool.tool_arguments is None
    # Notes seen on an earlier turn of the channel are still known.
    nudged = model.answer(channel_key="c", reply="hi", notes={}, nudged=True, tool=tool,
                          recent=RECENT)
    assert nudged.tool_arguments == {"goals": "x"}
