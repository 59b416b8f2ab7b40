"""Prompt texts are stored as typed and rendered safely, on every write path.

Reference §11: overrides are stored as typed; §4.3: only identifier-shaped
``{name}`` placeholders are touched when rendering, everything else is
literal. Each hostile template below goes in through every write path (admin
prompts, admin categories, config import, the model's tool call, an admin
memory edit) and must come out in the model's prompt exactly as written:
nothing reaches an attribute, an index, a conversion or a format spec.
"""

from __future__ import annotations

from typing import Any

import pytest

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.store import Stm

SERVER = "g1"
#: Each kept verbatim in the rendered text.
HOSTILE = [
    "Refresh at {12:30}",
    "{0.__class__}",
    "{0.__class__.__mro__[1].__subclasses__()}",
    "{x.__init__.__globals__}",
    "{user!r}",
    "{bot!s:>10}",
    "{x:>99999}",
    "{0[0]}",
    "{x[key]}",
    "{ spaced }",
    "{}",
    "{{",
    "}}",
    "{",
    "}",
    "{{0.__class__}}",
    "{{{x!r}}}",
    '{"json": [1, {"a": 2}]}',
    "%s %(x)s $x \\n",
]


def turn() -> Turn:
    return Turn(user_id="u1", channel_id="c1", server_id=SERVER, persona_id="p1",
                triggerer_name="Ann", bot_name="Tomori", provider="openai")


async def due_nudge(stm: Stm) -> str:
    """The nudge text of a turn after one counted turn (cadence 1)."""
    await stm.admin.set_server_params(SERVER, refresh_cadence=1)
    await stm.record_turn(turn(), [HistoryMessage(author_type="user", content="hi")],
                          [PersonaResponse(content="yo", persona_name="Tomori",
                                           persona_id="p1")])
    context = await stm.build_context(turn())
    assert context.nudge_item is not None
    return context.nudge_item.text


async def schema(stm: Stm) -> dict[str, Any]:
    declared = await stm.tool_schema(turn(), "openai")
    assert declared is not None
    return declared["function"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("template", HOSTILE)
async def test_admin_prompts_are_stored_as_typed_and_rendered_literally(
        stm: Stm, template: str) -> None:
    text = f"Hi {{user}}: <<{template}>> use {{short_term_memory_tool}}"
    prompts = await stm.admin.set_prompts(SERVER, nudge=text, tool_description=text)
    assert prompts.nudge.text == text and prompts.tool_description.text == text
    nudge = await due_nudge(stm)
    assert nudge == f"Hi Ann: <<{template}>> use `update_short_term_memory`"
    description = (await schema(stm))["description"]  # no mention conversion here
    assert description == f"Hi {{user}}: <<{template}>> use `update_short_term_memory`"


@pytest.mark.parametrize("template", HOSTILE)
async def test_category_descriptions_are_stored_and_rendered_literally(
        stm: Stm, template: str) -> None:
    shown = await stm.admin.set_categories(SERVER, [f"Goals: <<{template}>>"])
    assert shown.categories[0].description == f"<<{template}>>"
    field = (await schema(stm))["parameters"]["properties"]["goals"]["description"]
    assert field == f"<<{template}>>"


@pytest.mark.parametrize("template", HOSTILE)
async def test_imported_texts_follow_the_same_rule(stm: Stm, template: str) -> None:
    document = await stm.admin.export_config(SERVER)
    document["prompts"]["nudge"] = f"<<{template}>>"
    document["categories"] = [{"label": "Goals", "description": f"<<{template}>>"}]
    stored = await stm.admin.import_config(SERVER, document)
    assert stored["prompts"]["nudge"] == f"<<{template}>>"
    assert stored["categories"][0]["description"] == f"<<{template}>>"
    assert await due_nudge(stm) == f"<<{template}>>"
    field = (await schema(stm))["parameters"]["properties"]["goals"]["description"]
    assert field == f"<<{template}>>"


@pytest.mark.parametrize("template", HOSTILE)
async def test_model_and_admin_memory_writes_follow_the_same_rule(
        stm: Stm, template: str) -> None:
    result = await stm.apply_tool_call(turn(), {"summary": f"model <<{template}>>"})
    assert result.ok and result.written == {"summary": f"model <<{template}>>"}
    items = (await stm.build_context(turn())).memory_items
    assert any(f"model <<{template}>>" in item.text for item in items), items

    await stm.admin.edit_memory(channel_id="c1", persona_id="p1", server_id=SERVER,
                                summary=f"admin <<{template}>>")
    items = (await stm.build_context(turn())).memory_items
    assert any(f"admin <<{template}>>" in item.text for item in items), items


async def test_identifier_placeholders_are_still_the_only_thing_replaced(stm: Stm) -> None:
    text = "{user} {bot} {unknown_macro} {short_term_memory_tool} {0} {12:30}"
    await stm.admin.set_prompts(SERVER, nudge=text)
    assert await due_nudge(stm) == ("Ann Tomori unknown_macro `update_short_term_memory` "
                                    "{0} {12:30}")
