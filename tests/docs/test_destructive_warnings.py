"""Every destructive command a tutorial shows has a warning beside it.

A command is destructive when it asks before acting (it takes ``--yes``,
stm_core/cli/safety.py); shown with ``--dry-run`` it only previews. The
warning is an admonition (``!!! warning`` or ``!!! danger``) right after the
shell block, whose title names the command."""

from __future__ import annotations

import re
import shlex

import click
import pytest

from stm_core.cli.app import cli

from .test_code_blocks_run import FENCE, ROOT

PAGES = [*sorted((ROOT / "docs" / "tutorials").glob("*.md")), ROOT / "docs" / "deployment.md"]
ADMONITION = re.compile(r'\A\s*!!! (?:warning|danger) "(?P<title>[^"]*)"')


def command_of(words: list[str]) -> tuple[str, click.Command] | None:
    """The ``stm`` subcommand a shell line runs, and its path (``server categories set``)."""
    ctx = click.Context(cli)
    taking_values = {opt for p in cli.params if isinstance(p, click.Option)
                     and not p.is_flag and not p.count for opt in p.opts}
    command: click.Command = cli
    path: list[str] = []
    rest = iter(words)
    for word in rest:
        if not isinstance(command, click.Group):
            break
        if word in taking_values:
            next(rest, None)
        elif not word.startswith("-"):
            sub = command.get_command(ctx, word)
            if sub is None:
                break
            command, path = sub, [*path, word]
    return (" ".join(path), command) if path else None


def destructive_lines(code: str) -> list[str]:
    """The block's ``stm`` commands that would destroy, as their paths."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[0] != "stm" or "--dry-run" in words:
            continue
        named = command_of(words[1:])
        if named and any(p.name == "yes" for p in named[1].params):
            found.append(named[0])
    return found


def shown_commands() -> list[tuple[str, str, str]]:
    """``(page:line, command path, the text after the block)`` for each
    destructive command in a tutorial's shell blocks."""
    shown = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            if block["info"].strip() not in ("sh", "bash", "console"):
                continue
            line = text.count("\n", 0, block.start()) + 1
            for path in destructive_lines(block["code"]):
                shown.append((f"{page.name}:{line}", path, text[block.end():]))
    return shown


SHOWN = shown_commands()


def test_the_scan_finds_the_known_destructive_commands() -> None:
    paths = {path for _, path, _ in SHOWN}
    assert {"server categories set", "user forget", "janitor"} <= paths


@pytest.mark.parametrize(("where", "path", "after"), SHOWN, ids=[w for w, _, _ in SHOWN])
def test_a_warning_names_it_beside_the_block(where: str, path: str, after: str) -> None:
    warning = ADMONITION.match(after)
    assert warning is not None, f"{where}: `stm {path}` has no warning after its block"
    assert f"`stm {path}`" in warning["title"], warning["title"]
