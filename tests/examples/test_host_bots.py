"""examples/host-bots: the bot loop over the real OpenAI (Chat Completions and
Responses), Anthropic and Gemini SDK clients, in their offline mode: the SDK
builds and sends every request, and the scripted model answers on the SDK's own
transport with the SDK's own response types (no key, no network). Each bot
runs end to end through stm: the context is built and injected, the model
calls the memory tool when nudged, the call is applied, the turn recorded, and
the memory shows on the next turn."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import scripted
from anthropic_bot import anthropic_chat
from gemini_bot import gemini_chat
from host_loop import SAMPLE_LINES, Chat, converse
from openai_bot import openai_chat
from openai_responses_bot import responses_chat

from stm_core import TOOL_NAME, Stm, open_store
from stm_core.storage.records import MemoryKey

from .conftest import BOTS

Requests = list[dict[str, Any]]
LIVE_KEY = MemoryKey.server("7", "1001", "1")


@dataclass(frozen=True)
class Bot:
    script: str
    provider: str
    tool_format: str
    chat: Callable[[Requests], Chat]
    #: The memory tool's name in a request's tool declarations.
    declared: Callable[[dict[str, Any]], str]


BOT_LIST = [
    Bot("openai_bot.py", "openai", "openai",
        lambda requests: openai_chat(scripted.openai_client(requests=requests), "gpt-4o-mini"),
        lambda body: body["tools"][0]["function"]["name"]),
    Bot("openai_responses_bot.py", "openai", "openai-responses",
        lambda requests: responses_chat(scripted.openai_client(
            scripted.openai_responses_answer, requests), "gpt-4o-mini"),
        lambda body: body["tools"][0]["name"]),
    Bot("anthropic_bot.py", "anthropic", "anthropic",
        lambda requests: anthropic_chat(scripted.anthropic_client(requests),
                                        "claude-3-5-haiku-latest"),
        lambda body: body["tools"][0]["name"]),
    Bot("gemini_bot.py", "gemini", "gemini",
        lambda requests: gemini_chat(scripted.gemini_client(requests), "gemini-2.5-flash"),
        lambda body: body["tools"][0]["functionDeclarations"][0]["name"]),
]
IDS = [bot.script for bot in BOT_LIST]


@pytest.mark.parametrize("bot", BOT_LIST, ids=IDS)
async def test_the_bot_writes_its_memory_and_sees_it_next_turn(
        stm: Stm, bot: Bot, capsys: pytest.CaptureFixture[str]) -> None:
    requests: Requests = []
    reports = await converse(stm, bot.chat(requests), SAMPLE_LINES, provider=bot.provider,
                             tool_format=bot.tool_format)

    # Five turns fill the cadence; the sixth is nudged and the model writes.
    assert [r.nudged for r in reports] == [False] * 5 + [True, False]
    assert [len(r.tool_calls) for r in reports] == [0] * 5 + [1, 0]
    assert reports[5].tool_calls[0].ok
    assert [r.counter for r in reports] == [1, 2, 3, 4, 5, 1, 2]
    live = await stm.adapter.get_memory(LIVE_KEY)
    assert live is not None and live.summary == scripted.SUMMARY
    # Alice's lines are stored with her id, so that erasure finds them.
    assert {m.author_id for m in live.messages if m.speaker_name == "Alice"} == {"42"}
    # The next turn shows the memory, in the request the SDK sent.
    assert [r.memory_items for r in reports] == [[]] * 6 + [["same_channel"]]
    assert len(requests) == len(SAMPLE_LINES) + 1  # one extra round for the tool result
    # (requests[6] answers the tool call, which holds the summary too.)
    assert [scripted.SUMMARY in json.dumps(body) for body in requests[:6]] == [False] * 6
    assert scripted.SUMMARY in json.dumps(requests[7])
    # The tool is declared in the provider's own format, and never as null.
    for body in requests:
        assert body["tools"] and None not in body["tools"]
        assert bot.declared(body) == TOOL_NAME
    out = capsys.readouterr().out
    assert out.count(f"Tomori: {scripted.REPLY}") == len(SAMPLE_LINES)
    assert (f"turn 6: 0 memory item(s); nudged; tool offered; {TOOL_NAME}: ok; "
            "recorded, counter 1") in out


@pytest.mark.parametrize("bot", BOT_LIST, ids=IDS)
def test_offline_mode_runs_as_a_newcomer_would(bot: Bot, tmp_path: Path) -> None:
    """``python BOT --offline`` in an empty folder, with no key and nothing on
    standard input: the sample conversation, and the memory in ``bot.db``."""
    done = subprocess.run([sys.executable, str(BOTS / bot.script), "--offline"], cwd=tmp_path,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"turn 6: 0 memory item(s); nudged; tool offered; {TOOL_NAME}: ok" in done.stdout
    assert "turn 7: 1 memory item(s) (same_channel)" in done.stdout

    async def stored_summary() -> str | None:
        async with open_store(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
                              load_entrypoints=False) as stm:
            live = await stm.adapter.get_memory(LIVE_KEY)
        return None if live is None else live.summary

    assert asyncio.run(stored_summary()) == scripted.SUMMARY


def test_the_script_answers_only_a_nudged_turn_once() -> None:
    nudge = {"role": "user", "content": f"[System: ... call {TOOL_NAME} ...]"}
    tools = [{"name": TOOL_NAME}]
    assert scripted.calls_the_tool({"messages": [nudge], "tools": tools})
    assert not scripted.calls_the_tool({"messages": [nudge]})  # no tool declared
    assert not scripted.calls_the_tool({"messages": [{"role": "user", "content": "hi"}],
                                        "tools": tools})
    assert not scripted.calls_the_tool({"input": [nudge, {"type": "function_call_output",
                                                          "call_id": "c", "output": "ok"}],
                                        "tools": tools})


async def test_no_tool_means_no_tools_key(stm: Stm) -> None:
    """A provider that cannot call tools (NovelAI) gets no ``tools`` at all,
    not ``"tools": [null]``."""
    requests: Requests = []
    reports = await converse(stm, openai_chat(scripted.openai_client(requests=requests),
                                              "kayra"),
                             SAMPLE_LINES[:2], provider="novelai", tool_format="openai")
    assert [r.tool_offered for r in reports] == [False, False]
    assert len(requests) == 2 and all("tools" not in body for body in requests)


KEY_VARIABLES = {"openai_bot.py": "OPENAI_API_KEY", "openai_responses_bot.py": "OPENAI_API_KEY",
                 "anthropic_bot.py": "ANTHROPIC_API_KEY", "gemini_bot.py": "GEMINI_API_KEY"}


def run_script(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY",
                        "GOOGLE_API_KEY"}}
    return subprocess.run([sys.executable, str(BOTS / script), *args], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("bot", BOT_LIST, ids=IDS)
def test_help_says_how_to_run_it(bot: Bot, tmp_path: Path) -> None:
    done = run_script(bot.script, "--help", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"usage: {bot.script} [-h] [--offline]")
    assert KEY_VARIABLES[bot.script] in done.stdout and "--model" in done.stdout
    assert not (tmp_path / "bot.db").exists()  # --help runs nothing


@pytest.mark.parametrize("bot", BOT_LIST, ids=IDS)
def test_without_a_key_one_line_points_at_offline(bot: Bot, tmp_path: Path) -> None:
    done = run_script(bot.script, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line == (f"{bot.script}: no API key: set {KEY_VARIABLES[bot.script]}"
                    f"{' or GOOGLE_API_KEY' if bot.script == 'gemini_bot.py' else ''}, "
                    "or run with --offline (a scripted model, no key needed)")
    assert not (tmp_path / "bot.db").exists()
