"""``stm -v`` / ``--log-level``: stm's log records on stderr (docs/logging.md)."""

from __future__ import annotations

import logging

LEVELS = ("debug", "info", "warning", "error")
FORMAT = "stm: %(levelname)s %(name)s: %(message)s"


def level_for(verbose: int, log_level: str | None) -> int:
    """``--log-level`` wins; else ``-v`` is info and ``-vv`` debug; else warnings only."""
    if log_level is not None:
        return int(getattr(logging, log_level.upper()))
    return {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)


def configure(level: int) -> None:
    """Send the ``stm`` loggers to stderr at ``level`` (other libraries stay quiet)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger("stm")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
