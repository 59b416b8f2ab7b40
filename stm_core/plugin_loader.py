"""Deprecated path of :mod:`stm_core.plugins.loader`, kept until stm 1.0."""

from stm_core.moved import alias_moved_module

alias_moved_module(__name__, "stm_core.plugins.loader")
