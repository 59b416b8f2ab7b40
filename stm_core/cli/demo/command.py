"""The ``stm demo`` command: replay the bundled transcript and show what stm did."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import NoReturn

import attrs
import click
from click.core import ParameterSource
from rich.console import Console

from stm_core.cli.demo import render
from stm_core.cli.demo.results import DemoResult, TurnRecord
from stm_core.cli.demo.runner import run_demo
from stm_core.cli.demo.transcript import load_transcript
from stm_core.cli.state import CliState, run
from stm_core.errors import ConfigurationError, StmError, ValidationError
from stm_core.settings import Settings

EXIT_USAGE = 2
EXIT_FAILURE = 1


def _explicit_group_db(ctx: click.Context, state: CliState | None) -> str | None:
    """The group's ``--db``, but only when typed on the command line: the demo
    never writes into a database just because ``STM_DATABASE_URL`` is set."""
    if state is None or state.db_url is None:
        return None
    parent = ctx.parent
    if parent is not None:
        for name in ("db", "db_url"):
            source = parent.get_parameter_source(name) if name in parent.params else None
            if source is not None and source is not ParameterSource.COMMANDLINE:
                return None
    return state.db_url


def _fail(ctx: click.Context, message: str, code: int) -> NoReturn:
    """One line on stderr and the exit code; never a traceback."""
    click.echo(f"Error: {message}", err=True)
    ctx.exit(code)


@click.command(name="demo")
@click.option("--db", "db_url", metavar="URL", default=None,
              help="Replay on this database instead of a temporary SQLite file. Only the "
                   "demo's own servers, channels and users are touched (reset first).")
@click.option("--json", "json_output", is_flag=True, default=False,
              help="Print one JSON document (the turn records and the summary) and "
                   "nothing else.")
@click.option("--turns", "max_turns", type=click.IntRange(min=1), default=None,
              metavar="N", help="Replay only the first N turns.")
@click.option("--quiet", "-q", is_flag=True, default=False,
              help="One line per turn instead of the full view, then the summary.")
@click.option("--full", is_flag=True, default=False,
              help="Show memory blocks in full instead of their first lines.")
@click.option("--budget", "budget_tokens", type=click.IntRange(min=0), default=None,
              metavar="TOKENS", help="Hold stm's additions to this many tokens per turn "
                                     "(0: no budget) to watch the prompt budget at work.")
@click.pass_context
def demo(ctx: click.Context, db_url: str | None, json_output: bool, max_turns: int | None,
         quiet: bool, full: bool, budget_tokens: int | None) -> None:
    """Replay a bundled chat transcript through stm, turn by turn.

    Two servers (one in category mode with a private channel and a thread, one
    in summary mode), a DM, two personas on OpenAI and NovelAI, and a scripted
    model that calls update_short_term_memory when nudged. Each turn shows the
    memory items and the nudge, where they landed in the prompt, the tool, the
    tool call and the cadence counter; a summary closes the run.

    \b
    Examples:
      stm demo                  # the full walk-through
      stm demo --quiet          # one line per turn and the summary
      stm demo --turns 12       # stop after twelve turns
      stm demo --budget 150     # a tight prompt budget: watch stm shrink its block
      stm demo --json | jq '.summary'
      stm demo --db sqlite+aiosqlite:///demo.db   # keep the database afterwards
    """
    state = ctx.find_object(CliState)
    url = db_url or _explicit_group_db(ctx, state)
    as_json = json_output or (state is not None and state.json_output)
    try:
        settings = state.settings if state is not None else Settings.from_env()
        if budget_tokens is not None:
            settings = attrs.evolve(settings, prompt_budget_tokens=budget_tokens)
        transcript = load_transcript()
    except (ValidationError, ConfigurationError) as exc:
        _fail(ctx, str(exc), EXIT_USAGE)

    def replay(on_start: Callable[[str], None] | None = None,
               on_turn: Callable[[TurnRecord], None] | None = None) -> DemoResult:
        try:
            return run(run_demo(url, transcript=transcript, settings=settings,
                                max_turns=max_turns, on_start=on_start, on_turn=on_turn))
        except (ValidationError, ConfigurationError) as exc:
            _fail(ctx, str(exc), EXIT_USAGE)
        except StmError as exc:
            _fail(ctx, str(exc), EXIT_FAILURE)

    if as_json:
        result = replay()
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        console = Console()
        max_lines = None if full else render.DEFAULT_ITEM_LINES
        result = replay(
            on_start=functools.partial(render.render_intro, console, transcript),
            on_turn=None if quiet else functools.partial(render.render_turn, console,
                                                         max_lines=max_lines))
        if quiet:
            render.render_turn_table(console, result.turns)
        render.render_summary(console, result.summary)
    if result.summary.leaks:
        _fail(ctx, f"{len(result.summary.leaks)} private or DM lines appeared where they "
                   "must not", EXIT_FAILURE)
