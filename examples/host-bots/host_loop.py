"""The provider-neutral half of the example bot: one turn through stm.

``take_turn`` does what every host does each turn (build the context, splice
it in, offer the tool, apply the model's calls, record the window) around a
``chat`` function that talks to one provider's SDK, and reports what stm did.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from stm_core import TOOL_NAME, HistoryMessage, PersonaResponse, Stm, ToolResult, Turn
from stm_core.inject import inject

#: Runs one tool call of the model: ``(name, arguments) -> text for the model``.
ToolRunner = Callable[[str, Any], Awaitable[str]]
#: One provider's chat: ``(messages, tools, run_tool) -> the reply's text``.
Chat = Callable[[list[dict[str, Any]], list[dict[str, Any]], ToolRunner], Awaitable[str]]

#: What Alice says when no lines come on standard input: on the sixth turn stm
#: nudges the model to write its memory, and the seventh turn shows it.
SAMPLE_LINES = ["hi!", "I'm painting a mural", "teal or orange for the sky?", "maybe both",
                "the sun will be orange", "what do you think?", "thanks!"]


#: What a bot's ``main`` takes: ``main(offline=..., url=..., model=...)``.
BotMain = Callable[..., Awaitable[None]]


def run_bot(main: BotMain, doc: str, *, key_variables: tuple[str, ...],
            model: str) -> None:
    """The bots' command line: ``--help``, ``--offline``, ``--db``, ``--model``.
    Without ``--offline`` and without an API key in the environment, one line
    says which variable to set, or to try ``--offline``, instead of the SDK's
    traceback."""
    summary, _, details = doc.strip().partition("\n\n")
    parser = argparse.ArgumentParser(description=summary, epilog=details,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--offline", action="store_true",
                        help="no API key, no network: a scripted model answers on the "
                             "SDK's own client (scripted.py)")
    parser.add_argument("--db", default="sqlite+aiosqlite:///bot.db", metavar="URL",
                        help="the stm database (default: %(default)s)")
    parser.add_argument("--model", default=model, help="the model (default: %(default)s)")
    args = parser.parse_args()
    if not args.offline and not any(os.environ.get(name) for name in key_variables):
        parser.exit(2, f"{parser.prog}: no API key: set {' or '.join(key_variables)}, "
                       "or run with --offline (a scripted model, no key needed)\n")
    asyncio.run(main(offline=args.offline, url=args.db, model=args.model))


def user_lines() -> list[str]:
    """Alice's lines: standard input's, else (at a terminal, or when nothing
    is piped in) the sample conversation."""
    lines = [] if sys.stdin.isatty() else [line.strip() for line in sys.stdin if line.strip()]
    return lines or SAMPLE_LINES


@dataclass
class TurnReport:
    """What stm did in one turn."""

    memory_items: list[str]
    nudged: bool
    tool_offered: bool
    tool_calls: list[ToolResult] = field(default_factory=list)
    counter: int | None = None

    def line(self, number: int) -> str:
        parts = [f"turn {number}: {len(self.memory_items)} memory item(s)"
                 + (f" ({', '.join(self.memory_items)})" if self.memory_items else ""),
                 "nudged" if self.nudged else "no nudge",
                 "tool offered" if self.tool_offered else "no tool"]
        parts += [f"{TOOL_NAME}: {'ok' if r.ok else r.code}" for r in self.tool_calls]
        parts.append(f"recorded, counter {self.counter}")
        return "; ".join(parts)


def as_chat_messages(window: list[HistoryMessage]) -> list[dict[str, Any]]:
    return [{"role": "user" if m.author_type == "user" else "assistant", "content": m.content}
            for m in window]


async def take_turn(stm: Stm, turn: Turn, window: list[HistoryMessage], chat: Chat, *,
                    tool_format: str) -> tuple[str, TurnReport]:
    """One bot turn; ``window`` is the dialogue the model sees, ending with the
    user's new message. Returns the reply and what stm did."""
    ctx = await stm.build_context(turn)
    messages = inject(as_chat_messages(window), ctx)
    schema = await stm.tool_schema(turn, tool_format)
    tools = [schema] if schema else []  # never [None]
    report = TurnReport(memory_items=[item.kind for item in ctx.memory_items],
                        nudged=ctx.nudge_item is not None, tool_offered=bool(tools))

    async def run_tool(name: str, arguments: Any) -> str:
        if name != TOOL_NAME:
            return f"unknown tool {name}"
        result = await stm.apply_tool_call(turn, arguments)
        report.tool_calls.append(result)
        return result.message

    reply = await chat(messages, tools, run_tool)
    recorded = await stm.record_turn(turn, window, [PersonaResponse(
        content=reply, persona_name=turn.bot_name, persona_id=turn.persona_id)])
    report.counter = recorded.counters.get(turn.persona_id or "")
    return reply, report


async def converse(stm: Stm, chat: Chat, user_lines: list[str], *, provider: str,
                   tool_format: str, window_size: int = 10) -> list[TurnReport]:
    """Alice (user 42) talks to Tomori in one channel; prints what stm did
    each turn. Each of Alice's lines carries her id, so that her words can be
    exported and forgotten (``stm user export|forget 42``)."""
    window: list[HistoryMessage] = []
    reports = []
    for number, text in enumerate(user_lines, start=1):
        window.append(HistoryMessage(author_type="user", content=text, speaker_name="Alice",
                                     author_id="42"))
        turn = Turn(user_id="42", channel_id="1001", server_id="7", persona_id="1",
                    persona_lineage_id="1", bot_name="Tomori", triggerer_name="Alice",
                    provider=provider)
        reply, report = await take_turn(stm, turn, window[-window_size:], chat,
                                        tool_format=tool_format)
        print(f"Tomori: {reply}")
        print(f"  [stm] {report.line(number)}")
        window.append(HistoryMessage(author_type="persona", content=reply,
                                     speaker_name="Tomori"))
        reports.append(report)
    return reports
