"""The record types hooks return and receive, at the path plugin authors use.

A public path (docs/hook-policy.md): it stays, and always names the same
objects as :mod:`hookspecs.types`, where they are defined.
"""

from hookspecs.types import *  # noqa: F403
from hookspecs.types import __all__ as __all__
