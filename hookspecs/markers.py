"""The pluggy markers of the ``stm`` project."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "stm"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
