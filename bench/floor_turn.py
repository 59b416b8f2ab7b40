"""The floor of a whole host turn: write, then read back the prompt's memory.

:class:`FloorTurn` writes a guild turn through a :class:`~bench.floors_thread.ThreadWriter`
(stm's SQL, one hop) or an :class:`~bench.floors_thread.InlineWriter` (the same on
the caller's thread), keeps the returned row in a plain dict (its cache), and
renders the context with the hand-written build (:class:`~bench.floors.HandBuild`)
over that dict. It is what a careful host would write for this one workload,
with nothing configurable; stm's turn is ``record_turn`` + ``build_context``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bench import workload as w
from bench.floors import FloorResult, FloorRow, bench_hand_build, floor_server
from bench.floors_thread import ThreadWriter
from stm_core.models import HistoryMessage, PersonaResponse


class FloorTurn:
    def __init__(self, writer: ThreadWriter, server: str, names: Mapping[str, str], *,
                 render_mode: str, now_ms: int) -> None:
        self.writer = writer
        self.server = server
        self.floor = floor_server((), now_ms=now_ms, render_mode=render_mode)
        self.hand = bench_hand_build({server: self.floor}, channel_names=names, now_ms=now_ms)
        self._counter_at = -1

    async def write(self, channel: str, hist: Sequence[HistoryMessage],
                    resp: Sequence[PersonaResponse], now_ms: int) -> None:
        rows = await self.writer.record(self.server, channel, w.USER_ID, hist, resp, now_ms)
        if self._counter_at < 0:
            self._counter_at = self.writer.columns.index("turns_since_refresh")
        lines = [(m.speaker_name or "", m.content) for m in hist]
        lines += [(r.persona_name or "", r.content) for r in resp]
        self.floor.rows[channel] = FloorRow(
            channel_id=channel, lineage=w.LINEAGE_ID, summary=None, categories={},
            messages=tuple(lines[-w.MESSAGES:]), updated_at_ms=now_ms,
            counter=rows[0][self._counter_at])

    async def turn(self, channel: str, hist: Sequence[HistoryMessage],
                   resp: Sequence[PersonaResponse], now_ms: int) -> FloorResult:
        await self.write(channel, hist, resp, now_ms)
        self.hand.now_ms = now_ms
        return self.hand.build(self.server, channel)
