"""The record types hooks return and receive, at the path plugin authors use.

A public path (docs/hook-policy.md): it stays, and always names the same
objects as :mod:`stm_core.plugins.types`, where they are defined.
"""

from stm_core.plugins.types import *  # noqa: F403
from stm_core.plugins.types import __all__ as __all__
