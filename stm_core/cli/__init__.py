"""The operators' ``stm`` command (see ``docs/cli.md``).

:func:`main` is the console-script entry point. It maps errors to exit codes
with one line on stderr and no traceback: 2 for bad usage (click's errors) or
a refused value (:class:`~stm_core.errors.ValidationError`,
:class:`~stm_core.errors.ConfigurationError`, including an unknown database
URL), 1 for anything else that failed at run time, 130 when interrupted
(Ctrl-C). ``STM_DEBUG=1`` adds the traceback.

The package itself loads nothing heavy: :func:`main` imports click and the
commands, with the garbage collector paused while the command starts
(:mod:`stm_core.cli.startup`). The ``cli`` group loads on first use.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from stm_core.cli import startup
from stm_core.errors import ConfigurationError, StmError, ValidationError

if TYPE_CHECKING:
    import click

    from stm_core.cli.app import cli

USAGE_ERROR = 2
RUNTIME_ERROR = 1
#: Ended by Ctrl-C (SIGINT), as shells report it: 128 + 2.
INTERRUPTED = 130


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    message = text[0] if text else ""
    if isinstance(exc, StmError):
        return message or type(exc).__name__
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _fail(code: int, exc: BaseException) -> NoReturn:
    import click

    if os.environ.get("STM_DEBUG") == "1":
        import traceback

        traceback.print_exception(exc)
    click.echo(f"stm: error: {_one_line(exc)}", err=True)
    sys.exit(code)


def _usage_line(exc: click.ClickException) -> str:
    import click

    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        return f"{message} (see '{ctx.command_path} --help')"
    return message


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``stm`` (``argv`` defaults to the process arguments)."""
    startup.pause_collector()
    try:
        _main(argv)
    finally:
        startup.end_of_command()


def _main(argv: Sequence[str] | None) -> None:
    import click
    from click.exceptions import NoArgsIsHelpError

    from stm_core.cli.app import cli

    try:
        code = cli.main(args=list(argv) if argv is not None else None, prog_name="stm",
                        standalone_mode=False)
    except NoArgsIsHelpError as exc:  # a bare group: its help, as click shows it
        exc.show()
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # click's usage errors, bad files, ...
        click.echo(f"stm: error: {_usage_line(exc)}", err=True)
        sys.exit(exc.exit_code)
    except click.Abort as exc:
        # click turns Ctrl-C into Abort (the interrupt is its cause, or its
        # context inside a prompt); a "no" to a question is an Abort of its own.
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            click.echo("stm: interrupted", err=True)
            sys.exit(INTERRUPTED)
        click.echo("stm: aborted", err=True)
        sys.exit(RUNTIME_ERROR)
    except KeyboardInterrupt:
        click.echo("stm: interrupted", err=True)
        sys.exit(INTERRUPTED)
    except (ValidationError, ConfigurationError) as exc:
        _fail(USAGE_ERROR, exc)
    except Exception as exc:  # every other failure: one line, exit 1
        _fail(RUNTIME_ERROR, exc)
    sys.exit(code if isinstance(code, int) else 0)


__all__ = ["cli", "main"]



def __getattr__(name: str) -> Any:
    """``cli``, the click group, built when first read: the command line is the
    one place stm imports late, so ``stm --help`` loads no command's code."""
    if name == "cli":
        from stm_core.cli.app import cli

        globals()["cli"] = cli
        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
