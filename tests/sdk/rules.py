"""What each provider's API demands of a message list, read from the JSON an
SDK sends (independently of stm's own code): tool calls answered right after
them, and which messages are dialogue turns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Body = list[dict[str, Any]]


# -- OpenAI Chat Completions -------------------------------------------------------
def chat_pairs_whole(messages: Body) -> bool:
    for k, m in enumerate(messages):
        if m.get("role") == "tool":
            before = messages[k - 1] if k else {}
            if not (before.get("role") == "tool" or before.get("tool_calls")):
                return False
        if m.get("role") == "assistant" and m.get("tool_calls"):
            ids = {c["id"] for c in m["tool_calls"]}
            following = messages[k + 1:k + 1 + len(ids)]
            answered = [f.get("tool_call_id") for f in following if f.get("role") == "tool"]
            if len(answered) != len(following) or (
                    len(following) == len(ids) and set(answered) != ids):
                return False
    return True


def chat_turns(messages: Body) -> list[bool]:
    return [m.get("role") in ("user", "assistant") for m in messages]


# -- OpenAI Responses ----------------------------------------------------------------
def responses_pairs_whole(items: Body) -> bool:
    for k, item in enumerate(items):
        kind = item.get("type")
        following = items[k + 1].get("role") if k + 1 < len(items) else None
        if kind == "reasoning" and following not in (None, "assistant"):
            return False
        if kind == "function_call":
            rest = items[k + 1:]
            ends = [j for j, r in enumerate(rest)
                    if r.get("type") == "function_call_output"
                    and r.get("call_id") == item["call_id"]]
            between = rest[:ends[0]] if ends else rest
            if any(r.get("type") not in ("function_call", "function_call_output")
                   for r in between):
                return False
    return True


def responses_turns(items: Body) -> list[bool]:
    flags = []
    for k, item in enumerate(items):
        kind = item.get("type", "message")
        before = [i for i in items[:k] if i.get("type") != "reasoning"]
        flags.append(
            (kind == "message" and item.get("role") in ("user", "assistant"))
            or (kind == "function_call"
                and not (before and before[-1].get("type") == "function_call")))
    return flags


# -- Anthropic Messages ------------------------------------------------------------------
def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def anthropic_pairs_whole(messages: Body) -> bool:
    for k, m in enumerate(messages):
        uses = {b["id"] for b in blocks(m) if b.get("type") == "tool_use"}
        results = [b for b in blocks(m) if b.get("type") == "tool_result"]
        if results:
            before = messages[k - 1] if k else {}
            asked = {b["id"] for b in blocks(before) if b.get("type") == "tool_use"}
            if m["role"] != "user" or {b["tool_use_id"] for b in results} - asked:
                return False
            if blocks(m)[:len(results)] != results:  # results come first
                return False
        if uses and k + 1 < len(messages):
            answered = {b.get("tool_use_id") for b in blocks(messages[k + 1])
                        if b.get("type") == "tool_result"}
            if answered != uses:
                return False
    return True


def anthropic_turns(messages: Body) -> list[bool]:
    return [m["role"] in ("user", "assistant") and not (
        blocks(m) and all(b.get("type") == "tool_result" for b in blocks(m)))
        for m in messages]


# -- Google Gemini --------------------------------------------------------------------------
def kinds(content: dict[str, Any], key: str) -> int:
    return sum(1 for p in content.get("parts", []) if key in p)


def gemini_pairs_whole(contents: Body) -> bool:
    for k, c in enumerate(contents):
        if kinds(c, "functionResponse"):
            before = contents[k - 1] if k else {}
            if kinds(before, "functionCall") != kinds(c, "functionResponse"):
                return False
        if kinds(c, "functionCall") and k + 1 < len(contents) and (
                kinds(contents[k + 1], "functionResponse") != kinds(c, "functionCall")):
            return False
    return True


def gemini_turns(contents: Body) -> list[bool]:
    return [c.get("role", "user") in ("user", "model") and not (
        c.get("parts") and kinds(c, "functionResponse") == len(c["parts"]))
        for c in contents]


#: format -> (the request body's list key, pairs-whole check, turn flags)
RULES: dict[str, tuple[str, Callable[[Body], bool], Callable[[Body], list[bool]]]] = {
    "openai": ("messages", chat_pairs_whole, chat_turns),
    "openai-responses": ("input", responses_pairs_whole, responses_turns),
    "anthropic": ("messages", anthropic_pairs_whole, anthropic_turns),
    "gemini": ("contents", gemini_pairs_whole, gemini_turns),
}
