"""The cyclic garbage collector rests while a ``stm`` command starts and exits.

Starting builds objects that live as long as the process (modules, classes,
functions, plugin records) and frees almost nothing in cycles, so the
collector's passes over them find nothing to free; with the interpreter's
last collections at exit, which walk every object again only to free memory
the operating system takes back anyway, they were a sixth of a quick
command's work.

* :func:`stm_core.cli.main` pauses the collector first (:func:`pause_collector`);
* once the command has opened its store
  (:func:`stm_core.cli.session.open_cli_store`) it collects again, with what
  start-up built frozen (:func:`gc.freeze`): a long command (the janitor, an
  import) collects its own garbage as usual, without walking start-up's
  objects again and again (:func:`resume_collector`);
* when the command ends, everything is as it was (:func:`end_of_command`), so
  a caller that runs ``main()`` in-process keeps its collector;
* at exit, what is left is frozen before the interpreter's last collections.
  Python does not promise to finalize objects that still exist at exit;
  what stm must close (the store, log handlers) is closed explicitly.

Only what was changed here is changed back: a host that had turned the
collector off keeps it off.
"""

from __future__ import annotations

import atexit
import gc

_paused = False
_froze = False
_exit_hook = False


def pause_collector() -> None:
    """Turn the cyclic collector off for the start of a command."""
    global _paused, _exit_hook
    if not _exit_hook:
        atexit.register(gc.freeze)
        _exit_hook = True
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """The command has started: collect again, leaving out what exists now."""
    global _paused, _froze
    if _paused:
        _paused = False
        gc.freeze()
        _froze = True
        gc.enable()


def end_of_command() -> None:
    """Undo :func:`pause_collector` and :func:`resume_collector`."""
    global _froze
    resume_collector()
    if _froze:
        _froze = False
        gc.unfreeze()
