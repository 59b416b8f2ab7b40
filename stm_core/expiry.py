"""Old path of :mod:`stm_core.memory_ttl` (``stm_core.pipeline.expiry`` is the
stage that applies it)."""

from typing import TYPE_CHECKING

from stm_core.moved import alias_moved_module

if TYPE_CHECKING:  # what type checkers see: the names the module had
    from stm_core.memory_ttl import *  # noqa: F403

alias_moved_module(__name__, "stm_core.memory_ttl")
