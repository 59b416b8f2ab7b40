"""A scripted model: canned replies, and memory writes when it is nudged.

It behaves like a cooperative LLM: it answers with the transcript's reply and,
when the prompt carries the nudge and the tool is offered, calls
``update_short_term_memory`` with one value per argument the offered schema
declares (``summary`` in summary mode, one per category slug otherwise). The
values are the latest notes the transcript gives for the channel; when there
are none, a digest of the recent conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from stm_core.cli.demo.results import SpokenLine

DIGEST_LINES = 4
DIGEST_MAX_CHARS = 400


@attrs.frozen(kw_only=True)
class ModelAnswer:
    reply: str
    #: Arguments of an ``update_short_term_memory`` call, or ``None``.
    tool_arguments: dict[str, str] | None


def schema_properties(schema: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Argument names of a tool declaration in any of the built-in formats
    (OpenAI ``function.parameters``, Anthropic ``input_schema``, Gemini and
    neutral ``parameters``)."""
    if not schema:
        return ()
    body = schema.get("function", schema)
    params = body.get("parameters") or body.get("input_schema") or {}
    properties = params.get("properties") or {}
    return tuple(str(name) for name in properties)


def digest(recent: Sequence[SpokenLine]) -> str:
    """A plain recap of the last few lines: what a model falls back on."""
    parts = [f"{line.speaker}: {_first_sentence(line.text)}"
             for line in recent[-DIGEST_LINES:]]
    text = " / ".join(parts)
    return text if len(text) <= DIGEST_MAX_CHARS else text[:DIGEST_MAX_CHARS - 1] + "…"


def _first_sentence(text: str) -> str:
    for mark in (". ", "! ", "? "):
        cut = text.find(mark)
        if cut != -1:
            return text[:cut + 1]
    return text


def memory_arguments(properties: Sequence[str], notes: Mapping[str, str],
                     recent: Sequence[SpokenLine]) -> dict[str, str]:
    """One value per declared argument the notes cover; when the notes cover
    none, the digest goes to the first argument (a tool call with nothing in
    it would be refused)."""
    values = {name: notes[name] for name in properties if notes.get(name, "").strip()}
    if not values and properties:
        values[properties[0]] = digest(recent)
    return values


class ScriptedModel:
    """Answers one channel turn at a time; remembers the latest notes per channel."""

    def __init__(self) -> None:
        self._notes: dict[str, Mapping[str, str]] = {}

    def answer(self, *, channel_key: str, reply: str, notes: Mapping[str, str],
               nudged: bool, tool: Mapping[str, Any] | None,
               recent: Sequence[SpokenLine]) -> ModelAnswer:
        if notes:
            self._notes[channel_key] = notes
        if not nudged or tool is None:
            return ModelAnswer(reply=reply, tool_arguments=None)
        arguments = memory_arguments(schema_properties(tool),
                                     self._notes.get(channel_key, {}), recent)
        return ModelAnswer(reply=reply, tool_arguments=arguments or None)
