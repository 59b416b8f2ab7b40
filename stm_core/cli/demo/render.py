"""Rich output of a demo replay for people (``--json`` bypasses all of this).

Every piece of transcript or prompt text goes through :class:`rich.text.Text`,
never through console markup: memory blocks start with ``[System: ...`` and
would otherwise be read as markup tags.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from stm_core.cli.demo.results import (
    DemoSummary,
    InjectedItem,
    PromptMessage,
    ToolCall,
    TurnRecord,
)
from stm_core.cli.demo.transcript import Transcript

KIND_LABELS = {"other_channels": "other channels", "same_channel": "this channel",
               "nudge": "nudge"}
SHORT_KIND_LABELS = {"other_channels": "other", "same_channel": "this", "nudge": "nudge"}
KIND_STYLES = {"other_channels": "cyan", "same_channel": "green", "nudge": "bold yellow"}
VISIBILITY_STYLES = {"public": "", "private": "red", "thread": "red", "dm": "magenta"}
DEFAULT_ITEM_LINES = 6


def depth_label(depth: int) -> str:
    if depth < 0:
        return "anchored near the top"
    if depth == 0:
        return "depth 0 (tail)"
    return f"depth {depth}"


def _clip(text: str, max_lines: int | None) -> Text:
    lines = text.splitlines() or [""]
    if max_lines is None or len(lines) <= max_lines:
        return Text(text)
    shown = Text("\n".join(lines[:max_lines]))
    shown.append(f"\n… {len(lines) - max_lines} more lines (--full shows them)", style="dim")
    return shown


def _one_line(text: str) -> str:
    lines = text.splitlines()
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""


# -- the cast ----------------------------------------------------------------------------
def render_intro(console: Console, transcript: Transcript, database: str) -> None:
    cast = Table.grid(padding=(0, 2))
    cast.add_column(style="bold")
    cast.add_column()
    for server in transcript.servers.values():
        mode = ("category mode: " + ", ".join(c.label for c in server.categories)
                if server.categories else "summary mode")
        render_mode = server.render_mode or "crude_summary"
        channels = Text()
        for key, channel in transcript.channels.items():
            if channel.server != server.key:
                continue
            if channels:
                channels.append("  ")
            private = transcript.is_private(channel)
            label = f"#{channel.name}" + (" (thread)" if channel.parent else "")
            channels.append(label, style="red" if private else "")
            if key in server.private_channels:
                channels.append(" 🔒", style="red")
        cast.add_row(server.name, Text(f"{mode}; render mode {render_mode}"))
        cast.add_row("", channels)
    for persona in transcript.personas.values():
        cast.add_row(persona.name, Text(f"persona {persona.id}, lineage {persona.lineage}, "
                                        f"provider {persona.provider}"
                                        + (f", model {persona.model}" if persona.model else "")))
    dms = [c.name for c in transcript.channels.values() if c.server is None]
    if dms:
        cast.add_row("DMs", Text(", ".join(dms)))
    body = Group(Text(transcript.description, style="italic"), Text(""), cast, Text(""),
                 Text(f"database: {database}", style="dim"))
    console.print(Panel(body, title=Text(transcript.title, style="bold"), expand=True))


# -- one turn ------------------------------------------------------------------------------
def _header(record: TurnRecord) -> Text:
    title = Text(f"Turn {record.number} ", style="bold")
    title.append(f"· {record.time[11:16]} · ")
    title.append(record.where.label, style=VISIBILITY_STYLES[record.where.visibility] or "bold")
    if record.where.visibility != "public":
        title.append(f" ({record.where.visibility})", style="dim")
    title.append(f" · {record.persona_name} ({record.provider})")
    return title


def _incoming(record: TurnRecord) -> Text:
    text = Text()
    for i, line in enumerate(record.incoming):
        if i:
            text.append("\n")
        text.append(f"{line.speaker}: ", style="bold")
        text.append(line.text)
    return text


def _item_block(item: InjectedItem, where: str, max_lines: int | None) -> RenderableType:
    label = Text(f"▌ {KIND_LABELS[item.kind]}", style=KIND_STYLES[item.kind])
    label.append(f"  {where}" + ("" if item.index is None else f", message #{item.index}"),
                 style="dim")
    return Group(label, Padding(_clip(item.text, max_lines), (0, 0, 0, 2)))


def _stm_section(record: TurnRecord, max_lines: int | None) -> RenderableType:
    parts: list[RenderableType] = []
    memory_where = depth_label(record.memory_injection_depth)
    for item in record.memory_items:
        parts.append(_item_block(item, memory_where, max_lines))
    if record.nudge is not None:
        parts.append(_item_block(record.nudge, depth_label(record.nudge_injection_depth),
                                 max_lines))
    if not parts:
        parts.append(Text("nothing to add yet (no memories visible from here, no nudge)",
                          style="dim"))
    parts.append(Text(budget_line(record), style="dim"))
    return Group(*parts)


def budget_line(record: TurnRecord) -> str:
    """How much of the prompt budget stm's additions took."""
    if not record.budget_tokens:
        return f"{record.memory_tokens} tokens (no prompt budget)"
    return f"{record.memory_tokens} of {record.budget_tokens} tokens of the prompt budget"


def _prompt_lines(messages: Iterable[PromptMessage]) -> RenderableType:
    """One line per message, cut with an ellipsis; stm's items marked and coloured."""
    lines = []
    for index, message in enumerate(messages):
        line = Text(no_wrap=True, overflow="ellipsis")
        if message.injected is None:
            line.append(f"  {index:>2} ", style="dim")
            line.append(f"{message.role:<9} ", style="dim")
            line.append(_one_line(message.content),
                        style="dim" if message.role == "system" else "")
        else:
            style = KIND_STYLES[message.injected]
            line.append(f"▶ {index:>2} ", style=style)
            line.append(f"{message.role:<9} ", style=style)
            line.append(f"[{KIND_LABELS[message.injected]}] ", style=f"{style} bold")
            line.append(_one_line(message.content), style=style)
        lines.append(line)
    return Group(*lines)


def _tool_section(record: TurnRecord) -> Text:
    text = Text("tool: ", style="bold")
    if record.tool_offered:
        text.append("update_short_term_memory offered", style="green")
        text.append(f" ({', '.join(record.tool_properties)})", style="dim")
    else:
        text.append("not offered", style="red")
        if record.provider.lower() == "novelai":
            text.append(" (NovelAI has no tool calls, so no nudge either)", style="dim")
    return text


def _tool_call(call: ToolCall) -> RenderableType:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for name, value in call.arguments.items():
        table.add_row(f"{name}:", Text(value))
    outcome = Text("✓ " if call.ok else "✗ ", style="green" if call.ok else "red")
    outcome.append(call.message if call.ok else f"{call.code}: {call.message}")
    title = Text("model calls update_short_term_memory", style="bold yellow")
    return Group(title, Padding(table, (0, 0, 0, 2)), Padding(outcome, (0, 0, 0, 2)))


def _counter(record: TurnRecord) -> Text:
    text = Text(f"bot turn {record.bot_turn_in_channel} here · ", style="dim")
    text.append("turns since refresh: ", style="bold")
    if record.counter_after is None:
        text.append("not recorded", style="dim")
        return text
    text.append(f"{record.counter_before} → {record.counter_after}")
    if record.tool_call is not None and record.tool_call.ok:
        text.append("  (the tool call reset it to 0, then this turn counted +1)", style="dim")
    return text


def render_turn(console: Console, record: TurnRecord, *,
                max_lines: int | None = DEFAULT_ITEM_LINES) -> None:
    reply = Text(f"{record.persona_name}: ", style="bold")
    reply.append(record.reply)
    body: list[RenderableType] = [
        _incoming(record),
        Rule("what stm adds", style="dim", align="left"),
        _stm_section(record, max_lines),
        Rule("the prompt the model gets", style="dim", align="left"),
        _prompt_lines(record.messages),
        Rule("the model's turn", style="dim", align="left"),
        _tool_section(record),
    ]
    if record.tool_call is not None:
        body.append(_tool_call(record.tool_call))
    body += [reply, _counter(record)]
    border = "yellow" if record.nudge is not None else VISIBILITY_STYLES[
        record.where.visibility] or "blue"
    console.print(Panel(Group(*body), title=_header(record), title_align="left",
                        border_style=border))


# -- quiet mode and the summary --------------------------------------------------------------
def render_turn_table(console: Console, records: Iterable[TurnRecord]) -> None:
    table = Table(title="Turns", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  collapse_padding=True,
                  pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("time", no_wrap=True)
    table.add_column("channel", no_wrap=True, overflow="ellipsis", max_width=16)
    table.add_column("persona", no_wrap=True)
    table.add_column("memory", min_width=10, no_wrap=True)
    table.add_column("nudge", justify="center", min_width=5, no_wrap=True)
    table.add_column("tool", min_width=8, no_wrap=True)
    table.add_column("counter", justify="right", min_width=7, no_wrap=True)
    for r in records:
        channel = (r.where.channel_name if r.where.server_name is None
                   else f"#{r.where.channel_name}")
        items = "+".join(SHORT_KIND_LABELS[i.kind] for i in r.memory_items) or "—"
        if r.tool_call is not None:
            tool = Text("called ✓" if r.tool_call.ok else "called ✗",
                        style="green" if r.tool_call.ok else "red")
        else:
            tool = Text("offered" if r.tool_offered else "—",
                        style="" if r.tool_offered else "dim")
        counter = "" if r.counter_after is None else f"{r.counter_before}→{r.counter_after}"
        table.add_row(str(r.number), r.time[11:16],
                      Text(channel, style=VISIBILITY_STYLES[r.where.visibility]),
                      r.persona_name, items,
                      Text("●", style="yellow") if r.nudge is not None else "",
                      tool, counter)
    console.print(table)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def render_summary(console: Console, summary: DemoSummary) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", justify="right")
    table.add_column()
    where = f"{_count(summary.channels, 'channel')} on {_count(summary.servers, 'server')}"
    if summary.dms:
        where += f" and {_count(summary.dms, 'DM')}"
    table.add_row("turns", f"{_count(summary.turns, 'bot turn')} in {where}, "
                           f"{_count(summary.personas, 'persona')}")
    table.add_row("memory shown", f"{summary.turns_with_memory} turns had memory items "
                                  "in their prompt")
    table.add_row("nudges", f"{summary.nudges}, each once a channel's cadence of bot turns "
                            "was reached")
    table.add_row("tool calls", f"{summary.tool_calls_ok} of {summary.tool_calls} succeeded, "
                                f"{summary.memory_fields_written} memory fields written")
    kept = Text(f"{summary.private_lines} lines from private channels and threads, "
                f"{summary.dm_lines} DM lines: ")
    if summary.leaks:
        kept.append(f"{len(summary.leaks)} LEAKED", style="bold red")
    else:
        kept.append("none appeared where they must not", style="green")
    table.add_row("privacy", kept)
    table.add_row("NovelAI", f"{summary.novelai_turns} turns, "
                             f"{summary.novelai_turns_with_memory} with memory items, "
                             f"{summary.novelai_turns_with_tool_or_nudge} with a tool or nudge")
    for policy, f in summary.prefix_reuse.items():
        table.add_row(f"prompt cache ({policy})",
                      f"{f['mean_share']:.0%} of each prompt repeats the previous turn's "
                      f"({f['without_memory_mean_share']:.0%} with no memory at all; "
                      f"{f['steady_mean_share']:.0%} on the {f['steady_turns']} turns whose "
                      f"memory did not change); input cost about "
                      f"{f['relative_cost']:.2f}x of uncached")
    if summary.undo is not None:
        u = summary.undo
        table.add_row("undo", f"a bad rewrite of {u['persona_name']}'s memory in "
                              f"#{u['channel_name']} was undone (revision {u['restored_from']} "
                              f"restored as revision {u['rev']})")
    table.add_row("database", Text(summary.database, style="dim"))
    console.print(Panel(table, title=Text("What stm did", style="bold"), title_align="left",
                        border_style="green" if not summary.leaks else "red"))
    if summary.undo is not None:
        u = summary.undo
        scene = Group(Text("the model's rewrite:", style="bold"), _clip(str(u["bad"]), 3),
                      Text("after stm memory undo:", style="bold"),
                      _clip(str(u["restored"]), DEFAULT_ITEM_LINES))
        console.print(Panel(scene, title=Text("Undo a bad rewrite", style="bold"),
                            title_align="left"))
    for leak in summary.leaks:
        console.print(Text(f"turn {leak.turn} in {leak.channel} showed a line from "
                           f"{leak.origin_channel}: {leak.text}", style="red"))
