# What type checkers see at `stm_core.plugin_types`, the path plugin authors
# use for the hook record types: the import system serves it as
# `hookspecs.types` itself (stm_core._util.moved_paths.KEPT), without a warning.
from hookspecs.types import *  # noqa: F403
from hookspecs.types import __all__ as __all__
