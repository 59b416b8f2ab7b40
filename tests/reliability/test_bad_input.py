"""Bad input everywhere: property tests over what models, admins and hosts send.

Texts are drawn from everything Unicode has plus the nasty parts on purpose:
huge, empty, NUL and other control characters, unpaired surrogates, braces
everywhere and ``str.format`` attack shapes. On a real SQLite file:

* tool arguments (any JSON value, or a raw string): ``apply_tool_call``
  never raises; a stored value is at most ``max_summary_length``; a guild
  call writes the shared row and the user's copy together or not at all;
* admin inputs (ids, prompts, categories, parameters, imported documents):
  either a ``ValidationError`` with nothing written, or stored within every
  limit;
* templates and overrides: expansion never raises and never grows past its
  ceiling; a context with a hostile override builds without error;
* message texts and ids in turns: ``record_turn`` records or raises a
  ``StmError`` (never anything else) and never half-writes;
  ``build_context`` never raises and its output is linear in what was stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import string
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stm_core.errors import StmError, ValidationError
from stm_core.models import HistoryMessage, PersonaResponse, StmContext, Turn
from stm_core.settings import MAX_PROMPT_OVERRIDE_LENGTH, Settings
from stm_core.storage.records import MemoryFilter, MemoryKey
from stm_core.store import Stm, open_store
from stm_core.text.templates import MAX_EXPANDED_LENGTH, expand, sanitize

from .support import add_figure, scaled

T = TypeVar("T")
NASTY = ["{", "}", "{{", "}}", "\x00", "\ud800", "\udfff", "\n", "\r\n", "\x1b[31m", "\u202e",
         "{0.__class__}", "{x[0]}", "{x!r}", "{x:>999999999}", "{short_term_memory_tool}",
         "{category_labels}", "{user}", "{{bot}}", "<@123>", "<#456>", "[System: x]", "💥",
         "\ufeff", "'", '"', "\\", "%s", "$(rm -rf /)"]
EXAMPLES = scaled(ci=150, full=2000)
COUNT = {"cases": 0}


def nasty_text(max_pieces: int = 20) -> st.SearchStrategy[str]:
    piece = st.one_of(st.text(st.characters(codec=None, exclude_categories=()), max_size=8),
                      st.sampled_from(NASTY),
                      st.builds(lambda s, n: s * n, st.sampled_from(["x", "{", "é"]),
                                st.integers(1000, 30_000)))
    return st.lists(piece, max_size=max_pieces).map("".join)


ids = st.one_of(st.sampled_from(["c1", "c2", "g1", "u1"]), nasty_text(3))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
              nasty_text()),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(nasty_text(3), inner, max_size=4)),
    max_leaves=12)
tool_arguments = st.one_of(
    st.dictionaries(st.sampled_from(["summary", "goals", "mood", "x"]), json_values,
                    max_size=4),
    nasty_text(),
    json_values.map(lambda v: json.dumps(v, default=str)),
)

HYPOTHESIS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.too_slow,
                                             HealthCheck.function_scoped_fixture,
                                             HealthCheck.data_too_large])


async def snapshot(stm: Stm) -> list[Any]:
    """Every stored row of the servers and DMs these tests touch."""
    rows = []
    for server in ("g1", "cats", ""):
        rows += [(r.key, r.summary, dict(r.categories), r.messages, r.turns_since_refresh,
                  r.rev) for r in await stm.adapter.list_memories(MemoryFilter(server_id=server))]
    return sorted(rows, key=repr)


async def forget_everything(stm: Stm) -> None:
    for server in ("g1", "cats", ""):
        await stm.adapter.delete_memories(MemoryFilter(server_id=server))
    stm.engine.flush()


class Harness:
    """One store on a SQLite file and the event loop that drives it."""

    def __init__(self, stm: Stm, loop: asyncio.AbstractEventLoop) -> None:
        self.stm = stm
        self.loop = loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        COUNT["cases"] += 1
        return self.loop.run_until_complete(coro)


@contextmanager
def harness(folder: Path) -> Iterator[Harness]:
    loop = asyncio.new_event_loop()
    opened = open_store(f"sqlite+aiosqlite:///{folder / 'stm.db'}", settings=Settings(),
                        load_entrypoints=False)
    stm = loop.run_until_complete(opened.__aenter__())
    try:
        loop.run_until_complete(stm.admin.set_categories("cats", ["Goals: g", "Mood: m"]))
        yield Harness(stm, loop)
    finally:
        loop.run_until_complete(opened.__aexit__(None, None, None))
        loop.close()


def unchanged_when_refused(h: Harness, call: Callable[[], Coroutine[Any, Any, Any]]) -> bool:
    """Run ``call``; a ValidationError must leave the database as it was.
    True when the call succeeded."""
    before = h.run(snapshot(h.stm))
    settings_before = h.run(h.stm.adapter.load_server_settings("g1"))
    try:
        h.run(call())
    except ValidationError:
        assert h.run(snapshot(h.stm)) == before
        assert h.run(h.stm.adapter.load_server_settings("g1")) == settings_before
        return False
    return True


def test_tool_arguments_never_crash_and_never_half_write(tmp_path: Path,
                                                         figures: dict[str, Any]) -> None:
    with harness(tmp_path) as h:
        limit = h.stm.settings.max_summary_length

        @HYPOTHESIS
        @given(args=tool_arguments, server=st.sampled_from(["g1", "cats", None]),
               channel=ids)
        def check(args: Any, server: str | None, channel: str) -> None:
            turn = Turn(user_id="u1", channel_id=channel, server_id=server, has_tools=True)
            result = h.run(h.stm.apply_tool_call(turn, args))
            rows = [r for r in h.run(h.stm.adapter.list_memories(MemoryFilter(user_id="u1")))
                    if r.key.channel_id == channel]
            for row in rows:
                assert row.summary is None or len(row.summary) <= limit
                assert all(len(v) <= limit for v in row.categories.values())
            if result.ok and server is not None:
                live = h.run(h.stm.adapter.get_memory(MemoryKey.server(server, channel, None)))
                assert live is not None and rows
                assert live.summary == rows[0].summary and live.categories == rows[0].categories

        check()
    add_figure(figures, "bad_input_cases", COUNT["cases"])


def test_admin_inputs_are_refused_whole_or_stored_within_limits(
        tmp_path: Path, figures: dict[str, Any]) -> None:
    with harness(tmp_path) as h:
        admin = h.stm.admin

        @HYPOTHESIS
        @given(server=ids, text=nasty_text(), lines=st.lists(nasty_text(4), max_size=8),
               cadence=st.one_of(st.integers(-10**6, 10**6), st.none(), st.booleans(),
                                 st.floats()),
               document=json_values)
        def check(server: str, text: str, lines: list[str], cadence: Any,
                  document: Any) -> None:
            if unchanged_when_refused(h, lambda: admin.set_prompts(server, nudge=text,
                                                                   tool_description=text)):
                stored = h.run(admin.prompts(server))
                assert len(stored.nudge.text) <= MAX_PROMPT_OVERRIDE_LENGTH
            if unchanged_when_refused(h, lambda: admin.set_categories(server, lines)):
                cats = h.run(admin.categories(server)).categories
                assert len(cats) <= h.stm.settings.max_categories
            if unchanged_when_refused(h, lambda: admin.set_server_params(
                    server, refresh_cadence=cadence)):
                assert 1 <= h.run(admin.server_params(server)).refresh_cadence <= 100
            unchanged_when_refused(h, lambda: admin.import_config("g1", document))
            unchanged_when_refused(h, lambda: admin.edit_memory(
                channel_id=server, server_id="g1", user_id="u1", summary=text))

        check()
    add_figure(figures, "bad_input_cases", COUNT["cases"])


@settings(max_examples=scaled(ci=3000, full=30_000), deadline=None, derandomize=True)
@given(template=nasty_text(), values=st.dictionaries(
    st.text(string.ascii_letters, min_size=1, max_size=8), nasty_text(4), max_size=5))
def test_templates_never_crash_and_stay_bounded(template: str, values: dict[str, str]) -> None:
    COUNT["cases"] += 1
    out = expand(template, values)
    # Expansion may grow a text up to the ceiling, never past it.
    assert len(out) <= max(len(template), MAX_EXPANDED_LENGTH)
    assert len(out) <= len(template) + template.count("{") * max(
        (len(v) for v in values.values()), default=0)
    assert len(sanitize(out)) <= len(out)


def test_hostile_overrides_and_texts_never_break_a_turn(tmp_path: Path,
                                                        figures: dict[str, Any]) -> None:
    with harness(tmp_path) as h:
        stm = h.stm

        @HYPOTHESIS
        @given(override=nasty_text(), message=nasty_text(), user=ids, channel=ids,
               persona=st.one_of(st.none(), ids), server=st.sampled_from(["g1", "cats", None]),
               names=st.dictionaries(ids, nasty_text(3), max_size=3))
        def check(override: str, message: str, user: str, channel: str,
                  persona: str | None, server: str | None, names: dict[str, str]) -> None:
            h.run(forget_everything(stm))  # each example starts from an empty store
            with contextlib.suppress(ValidationError):
                h.run(stm.admin.set_prompts("g1", nudge=override, tool_description=override))
            turn = Turn(user_id=user, channel_id=channel, server_id=server, persona_id=persona,
                        has_tools=True, user_names=names)
            before = h.run(snapshot(stm))
            try:
                h.run(stm.record_turn(turn, [HistoryMessage(
                    author_type="user", content=message, speaker_name=user)],
                    [PersonaResponse(persona_id=persona, persona_name=message[:50],
                                     content=message)]))
            except StmError:
                assert h.run(snapshot(stm)) == before, "a failed turn wrote something"
            ctx = h.run(stm.build_context(turn))
            assert isinstance(ctx, StmContext)
            shown = sum(len(i.text) for i in ctx.memory_items)
            stored = sum(len(json.dumps(r, default=str)) for r in h.run(snapshot(stm)))
            names_len = sum(len(v) for v in names.values())
            assert shown <= 2 * stored + 20 * names_len + 20_000
            if ctx.nudge_item is not None:
                assert len(ctx.nudge_item.text) <= MAX_EXPANDED_LENGTH + 20 * names_len

        check()
    add_figure(figures, "bad_input_cases", COUNT["cases"])
