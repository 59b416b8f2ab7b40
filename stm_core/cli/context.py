"""``stm context``: what stm would add to a turn's prompt, and where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from stm_core.cli.context_changes import load_previous, previous_messages, prompt_changes
from stm_core.cli.files import read_json_file
from stm_core.cli.memory import TRIGGER_HELP, resolve_where, where_options_with
from stm_core.cli.output import emit, heading, plain
from stm_core.cli.session import json_option, open_cli_store, pass_state, reads_only
from stm_core.cli.state import CliState, run
from stm_core.errors import ValidationError
from stm_core.models import ContextItem, StmContext, Turn

if TYPE_CHECKING:
    from stm_core.cli.screen import Screen

if TYPE_CHECKING:
    from stm_core.cli.screen import Screen

#: A short dialogue to show the placement on when no --dialogue file is given.
SAMPLE_DIALOGUE: tuple[dict[str, str], ...] = (
    {"role": "system", "content": "You are a friendly game master."},
    {"role": "user", "content": "We open the crypt door. What do we see?"},
    {"role": "assistant", "content": "Dust, bones, and a silver key on the altar."},
    {"role": "user", "content": "Bob takes the key."},
    {"role": "assistant", "content": "The key is cold in Bob's hand; something stirs."},
    {"role": "user", "content": "We run for the exit!"},
)


def load_dialogue(path: Path | None) -> list[dict[str, Any]]:
    if path is None:
        return [dict(m) for m in SAMPLE_DIALOGUE]
    data = read_json_file(path, field="dialogue", allowed="a JSON list of chat messages")
    if not isinstance(data, list) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in data):
        raise ValidationError(f"{path}: expected a JSON list of messages like "
                              '{"role": "user", "content": "..."}', field="dialogue",
                              allowed="a JSON list of chat messages")
    return data


def item_dict(item: ContextItem) -> dict[str, str]:
    return {"kind": item.kind, "role": item.role, "tag": item.tag, "text": item.text}


def context_dict(ctx: StmContext, schema: dict[str, Any] | None,
                 messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "memory_items": [item_dict(i) for i in ctx.memory_items],
        "nudge": item_dict(ctx.nudge_item) if ctx.nudge_item else None,
        "nudge_injection_depth": ctx.nudge_injection_depth,
        "memory_injection_depth": ctx.memory_injection_depth,
        "tool_schema": schema,
        "messages": messages,
    }


def show_changes(out: Screen, changes: dict[str, Any]) -> None:
    heading(out, "Changes since the previous turn")
    for part in changes["parts"]:
        style = "green" if part["status"] == "unchanged" else "yellow"
        plain(out, f"{part['part']}: {part['status']}", style=style)
    first = changes.get("first_change")
    plain(out, "the previous prompt is the start of this one" if first is None
          else f"first difference: {first} (everything above it is reused)")
    plain(out, f"prompt prefix reused from the previous turn: {changes['prefix_reuse']:.1%}")
    out.print()


def show_context(out: Screen, data: dict[str, Any]) -> None:
    if "changes" in data:
        show_changes(out, data["changes"])
    heading(out, f"Memory items ({len(data['memory_items'])})")
    for item in data["memory_items"]:
        plain(out, f"-- {item['kind']} --", style="dim")
        plain(out, item["text"])
    if not data["memory_items"]:
        plain(out, "(none)", style="italic")
    out.print()
    heading(out, "Nudge")
    plain(out, data["nudge"]["text"] if data["nudge"] else "(not due this turn)",
          style=None if data["nudge"] else "italic")
    out.print()
    depth = data["memory_injection_depth"]
    heading(out, "Depths")
    plain(out, f"memory block: {'anchored near the top' if depth < 0 else depth}; "
               f"nudge: {data['nudge_injection_depth']}")
    out.print()
    heading(out, "Tool schema (neutral)")
    schema = data["tool_schema"]
    plain(out, json.dumps(schema, indent=2, ensure_ascii=False) if schema
          else "(not offered this turn)")
    out.print()
    heading(out, "Dialogue with everything injected")
    for message in data["messages"]:
        injected = message.get("tag") is not None
        label = f"{message.get('role')}{' [stm]' if injected else ''}"
        plain(out, f"{label}:", style="bold green" if injected else "bold")
        plain(out, str(message.get("content", "")))


@click.command()
@where_options_with(TRIGGER_HELP)
@click.option("--channel", "channel_id", required=True, metavar="ID")
@click.option("--persona", "persona_id", metavar="ID")
@click.option("--lineage", "lineage_id", metavar="ID", help="The persona lineage id.")
@click.option("--provider", default="", help="LLM provider key, e.g. openai, anthropic, a "
              "plugin's own key or a model id such as gpt-4o-mini; a key no rule knows "
              "gets the fallback tool format with a warning, as a host's turn does "
              "(STM_STRICT_PROVIDERS=1 refuses it).")
@click.option("--no-tools", is_flag=True, help="The model has no tool support this turn.")
@click.option("--parent", "parent_channel_id", metavar="ID",
              help="The parent channel when --channel is a thread.")
@click.option("--bot-name", default="Assistant", show_default=True)
@click.option("--user-name", default="User", show_default=True)
@click.option("--impersonation", is_flag=True, help="A user-impersonation turn.")
@click.option("--long-term-intent", is_flag=True,
              help="The user asked for long-term memory (tool and nudge stand back).")
@click.option("--dialogue", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A JSON list of OpenAI-style messages (default: a small sample).")
@click.option("--previous", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="An earlier `stm --json context` output: show which parts of the prompt "
                   "changed since then.")
@json_option
@reads_only
@pass_state
def context(state: CliState, server_id: str | None, dm: bool, user_id: str | None,
            channel_id: str, persona_id: str | None, lineage_id: str | None, provider: str,
            no_tools: bool, parent_channel_id: str | None, bot_name: str, user_name: str,
            impersonation: bool, long_term_intent: bool, dialogue: Path | None,
            previous: Path | None) -> None:
    """Show the short-term memory of a turn and where it lands in the prompt.

    Prints the memory items, the nudge (when due), both depths, the tool
    schema in neutral form and a dialogue with everything spliced in, as
    --user would see them. Nothing is written: no turn is counted or
    recorded, and a database without a current schema is refused ('stm db
    upgrade' creates it).

    \b
    Examples:
      stm context --server 1234567890 --channel 555 --user 42 --persona 7
      stm context --dm --user 42 --channel 900 --provider anthropic
      stm --json context --server 1234567890 --channel 555 --user 42 --dialogue chat.json
      stm context --server 1234567890 --channel 555 --user 42 --previous turn1.json
    """
    server = resolve_where(server_id, dm, user_id)
    if not user_id:
        raise click.UsageError("--user ID is required (the user who triggers the turn)")
    messages = load_dialogue(dialogue)
    earlier = load_previous(previous) if previous is not None else None
    turn = Turn(user_id=user_id, channel_id=channel_id, server_id=server,
                parent_channel_id=parent_channel_id, persona_id=persona_id,
                persona_lineage_id=lineage_id, bot_name=bot_name, triggerer_name=user_name,
                provider=provider, has_tools=not no_tools, is_user_impersonation=impersonation,
                explicit_long_term_intent=long_term_intent)

    async def go() -> dict[str, Any]:
        from stm_core.inject import inject

        async with open_cli_store(state) as stm:
            ctx = await stm.build_context(turn)
            schema = await stm.tool_schema(turn, "neutral")
            # The turn's own format too, by the host's rule: a key no rule knows
            # is previewed with the fallback and one warning, or refused under
            # STM_STRICT_PROVIDERS, exactly as a host's turn would be.
            await stm.tool_schema(turn)
        before = previous_messages(earlier) if earlier is not None else None
        return context_dict(ctx, schema, inject(messages, ctx, keep_tags=True,
                                                previous=before))

    data = run(go())
    if earlier is not None:
        data["changes"] = prompt_changes(earlier, data)
    emit(state, data, lambda out: show_context(out, data))
