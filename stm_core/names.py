"""Deprecated path of :mod:`stm_core.name_maps`, kept until stm 1.0."""

from typing import TYPE_CHECKING

from stm_core.moved import alias_moved_module

if TYPE_CHECKING:  # what type checkers see: the names the module had
    from stm_core.name_maps import *  # noqa: F403

alias_moved_module(__name__, "stm_core.name_maps")
