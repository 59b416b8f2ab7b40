"""The replay engine: a transcript through the whole stm cycle, turn by turn.

Per turn it does exactly what a host does: ``build_context``, ``inject`` into
the OpenAI-style dialogue, ``tool_schema``, ``apply_tool_call`` when the
(scripted) model calls the tool, and ``record_turn`` after the reply. A
:class:`~stm_core._util.clock.ManualClock` moves between turns, so relative times,
freshness and expiry behave as they would over an evening of chat.
"""

from __future__ import annotations

import functools
import logging
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from stm_core._util.clock import ManualClock
from stm_core.cli.demo.audit import PrivacyAudit
from stm_core.cli.demo.model import ScriptedModel, schema_properties
from stm_core.cli.demo.placement import place
from stm_core.cli.demo.results import (
    DemoResult,
    DemoSummary,
    Leak,
    SpokenLine,
    ToolCall,
    TurnRecord,
)
from stm_core.cli.demo.transcript import ScriptedTurn, Transcript, load_transcript
from stm_core.cli.demo.undo import undo_scene
from stm_core.cli.demo.world import World
from stm_core.inject.prompt_reuse import HostPrompts, PrefixReuse, prompt_text, without_memory
from stm_core.models import HistoryMessage, PersonaResponse
from stm_core.settings import CACHE_POLICIES, Settings
from stm_core.store import Stm, open_store

log = logging.getLogger("stm.demo")

TEMPORARY_DATABASE = "temporary SQLite file (removed afterwards)"
NOVELAI = "novelai"


@attrs.frozen(kw_only=True)
class _Said:
    """One message of a channel's running dialogue."""

    persona: str | None  # persona key for bot messages
    speaker: str
    text: str
    #: The user's id (a persona's id for bot messages), passed as the line's
    #: author so erasure finds it, as every host should.
    author_id: str | None = None


def display_url(url: str) -> str:
    """The URL with any password hidden."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # not a URL SQLAlchemy parses: show as is
        return url


class Replay:
    """Plays scripted turns against one open store."""

    def __init__(self, stm: Stm, transcript: Transcript, clock: ManualClock) -> None:
        self.stm = stm
        self.transcript = transcript
        self.world = World(transcript)
        self.clock = clock
        self.model = ScriptedModel()
        self.audit = PrivacyAudit()
        self.leaks: list[Leak] = []
        #: Prompts with each channel's whole dialogue (what a cache-aware host sends).
        self.host = HostPrompts()
        self.reuse = PrefixReuse()
        #: The same prompts without memory: what reuse the conversation allows at all.
        self.baseline = PrefixReuse()
        self._dialogues: dict[str, list[_Said]] = defaultdict(list)
        self._counters: dict[tuple[str, str], int] = {}
        self._bot_turns: dict[tuple[str, str], int] = defaultdict(int)

    def _dialogue(self, scripted: ScriptedTurn,
                  window: list[_Said]) -> list[dict[str, Any]]:
        """The host's prompt: a system message, then the channel's recent lines
        (this persona's as ``assistant``, everyone else's as ``user``)."""
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.world.system_prompt(scripted)}]
        for said in window:
            if said.persona == scripted.persona:
                messages.append({"role": "assistant", "content": said.text})
            else:
                messages.append({"role": "user", "content": f"{said.speaker}: {said.text}"})
        return messages

    async def play(self, number: int, scripted: ScriptedTurn) -> TurnRecord:
        t = self.transcript
        self.clock.advance(minutes=scripted.after_minutes)
        persona = t.personas[scripted.persona]
        where = self.world.where(scripted.channel)
        lines = self._dialogues[scripted.channel]
        incoming = tuple(SpokenLine(speaker=t.users[m.user].name, text=m.text)
                         for m in scripted.messages)
        lines.extend(_Said(persona=None, speaker=t.users[m.user].name, text=m.text,
                           author_id=t.users[m.user].id) for m in scripted.messages)
        window = lines[-t.history_window:]

        turn = self.world.turn(scripted)
        ctx = await self.stm.build_context(turn)
        placed = place(self._dialogue(scripted, window), ctx)
        conversation = (scripted.channel, scripted.persona)
        whole = self._dialogue(scripted, lines)
        self.reuse.observe(conversation, prompt_text(self.host.prompt(conversation, whole, ctx)),
                           memory=(i.text for i in ctx.memory_items))
        self.baseline.observe(conversation, without_memory(whole))
        shown = [i.text for i in ctx.memory_items]
        if ctx.nudge_item is not None:
            shown.append(ctx.nudge_item.text)
        count = self.stm.hooks.token_counter(turn.provider)
        profile = await self.stm.engine.profile_for(turn.server_id)
        self.leaks.extend(self.audit.leaks(number, where, shown))

        tool = await self.stm.tool_schema(turn)
        recent = [SpokenLine(speaker=s.speaker, text=s.text) for s in window]
        answer = self.model.answer(channel_key=scripted.channel, reply=scripted.reply,
                                   notes=scripted.notes, nudged=ctx.nudge_item is not None,
                                   tool=tool, recent=recent)
        call = None
        if answer.tool_arguments is not None:
            result = await self.stm.apply_tool_call(turn, answer.tool_arguments)
            call = ToolCall(arguments=dict(answer.tool_arguments), ok=result.ok,
                            message=result.message, code=result.code,
                            written=dict(result.written))

        history = [HistoryMessage(author_type="user" if s.persona is None else "persona",
                                  content=s.text, speaker_name=s.speaker,
                                  author_id=s.author_id) for s in window]
        response = PersonaResponse(content=answer.reply, persona_name=persona.name,
                                   persona_id=persona.id, persona_lineage_id=persona.lineage)
        recorded = await self.stm.record_turn(turn, history, [response])
        lines.append(_Said(persona=scripted.persona, speaker=persona.name, text=answer.reply,
                           author_id=persona.id))
        self.audit.said(where, [*(s.text for s in incoming), answer.reply])

        key = (scripted.channel, scripted.persona)
        before = self._counters.get(key, 0)
        after = recorded.counters.get(persona.id)
        if after is not None:
            self._counters[key] = after
        self._bot_turns[key] += 1
        now = datetime.fromtimestamp(self.clock.now_ms() / 1000, tz=UTC)
        return TurnRecord(
            number=number,
            minute=(self.clock.now_ms() - t.start_ms) / 60_000,
            time=now.isoformat().replace("+00:00", "Z"),
            where=where, persona_id=persona.id, persona_name=persona.name,
            persona_lineage_id=persona.lineage, provider=persona.provider,
            triggered_by=incoming[-1].speaker, incoming=incoming,
            bot_turn_in_channel=self._bot_turns[key],
            memory_items=placed.memory_items, nudge=placed.nudge,
            nudge_injection_depth=ctx.nudge_injection_depth,
            memory_injection_depth=ctx.memory_injection_depth,
            messages=placed.messages, tool_offered=tool is not None,
            tool_properties=schema_properties(tool), tool_schema=tool, tool_call=call,
            reply=answer.reply,
            counter_before=before, counter_after=after,
            memory_tokens=sum(count(text) for text in shown),
            budget_tokens=profile.prompt_budget_tokens)

    def reuse_figures(self) -> dict[str, Any]:
        """Prefix reuse of the replay, with the no-memory baseline beside it."""
        return {**self.reuse.figures().to_dict(),
                "without_memory_mean_share": round(self.baseline.figures().mean_share, 4)}

    def summary(self, records: Iterable[TurnRecord], database: str) -> DemoSummary:
        records = list(records)
        calls = [r.tool_call for r in records if r.tool_call is not None]
        novelai = [r for r in records if r.provider.lower() == NOVELAI]
        return DemoSummary(
            database=database,
            turns=len(records),
            channels=len({r.where.channel_id for r in records}),
            servers=len({r.where.server_id for r in records if r.where.server_id}),
            dms=len({r.where.channel_id for r in records if r.where.server_id is None}),
            personas=len({r.persona_id for r in records}),
            nudges=sum(r.nudge is not None for r in records),
            tool_calls=len(calls),
            tool_calls_ok=sum(c.ok for c in calls),
            memory_fields_written=sum(len(c.written) for c in calls if c.ok),
            turns_with_memory=sum(bool(r.memory_items) for r in records),
            private_lines=self.audit.private_lines,
            dm_lines=self.audit.dm_lines,
            leaks=tuple(self.leaks),
            novelai_turns=len(novelai),
            novelai_turns_with_memory=sum(bool(r.memory_items) for r in novelai),
            novelai_turns_with_tool_or_nudge=sum(
                r.tool_offered or r.nudge is not None or r.tool_call is not None
                for r in novelai),
        )


async def replay(url: str, *, database: str, transcript: Transcript,
                 settings: Settings | None = None, max_turns: int | None = None,
                 on_start: Callable[[str], None] | None = None,
                 on_turn: Callable[[TurnRecord], None] | None = None,
                 load_entrypoints: bool = False,
                 cache_policy: str | None = None, undo: bool = False) -> DemoResult:
    """Replay ``transcript`` on the database at ``url``; ``on_start`` gets the
    database's display name once the store is open and the servers are set up."""
    clock = ManualClock(transcript.start_ms)
    turns = transcript.turns if max_turns is None else transcript.turns[:max_turns]
    records: list[TurnRecord] = []
    async with open_store(url, settings=settings or Settings(), clock=clock,
                          load_entrypoints=load_entrypoints) as stm:
        game = Replay(stm, transcript, clock)
        await game.world.configure(stm, cache_policy=cache_policy)
        if on_start is not None:
            on_start(database)
        for number, scripted in enumerate(turns, 1):
            record = await game.play(number, scripted)
            records.append(record)
            if on_turn is not None:
                on_turn(record)
        scene = await undo_scene(stm, game.world) if undo else None
        summary = attrs.evolve(game.summary(records, database), prefix_reuse={
            cache_policy or "freshness": game.reuse_figures()},
            undo=attrs.asdict(scene) if scene is not None else None)
    return DemoResult(title=transcript.title, turns=tuple(records), summary=summary)


async def measure_prefix_reuse(transcript: Transcript | None = None, *,
                               settings: Settings | None = None,
                               max_turns: int | None = None) -> dict[str, Any]:
    """The transcript replayed in memory once per cache policy: each policy's
    turn-over-turn prompt reuse (see :mod:`stm_core.inject.prompt_reuse`)."""
    transcript = transcript or load_transcript()
    figures: dict[str, Any] = {}
    for policy in CACHE_POLICIES:
        # The policy as the process default too: direct messages have no server.
        env = attrs.evolve(settings or Settings(), default_cache_policy=policy)
        result = await replay("memory://", database="memory", transcript=transcript,
                              settings=env, max_turns=max_turns, cache_policy=policy)
        figures.update(result.summary.prefix_reuse)
    return figures


async def run_demo(url: str | None = None, *, transcript: Transcript | None = None,
                   settings: Settings | None = None, max_turns: int | None = None,
                   on_start: Callable[[str], None] | None = None,
                   on_turn: Callable[[TurnRecord], None] | None = None,
                   load_entrypoints: bool = False) -> DemoResult:
    """Replay the bundled transcript (or ``transcript``).

    Without ``url`` it runs on a temporary SQLite file that is removed
    afterwards; with one, on that database (the demo's own servers, channels
    and users are reset first). ``on_start`` is called once the store is open,
    ``on_turn`` with each record as it is made.
    """
    transcript = transcript or load_transcript()
    play = functools.partial(replay, transcript=transcript, settings=settings,
                             max_turns=max_turns, on_start=on_start, on_turn=on_turn,
                             load_entrypoints=load_entrypoints, undo=True)
    if url is not None:
        result = await play(url, database=display_url(url))
    else:
        with tempfile.TemporaryDirectory(prefix="stm-demo-") as tmp:
            path = Path(tmp) / "demo.db"
            log.debug("demo database: %s", path)
            result = await play(f"sqlite+aiosqlite:///{path}", database=TEMPORARY_DATABASE)
    # Both policies' figures, from replays in memory (the run above used the default).
    figures = await measure_prefix_reuse(transcript, settings=settings, max_turns=max_turns)
    return attrs.evolve(result, summary=attrs.evolve(result.summary, prefix_reuse=figures))
