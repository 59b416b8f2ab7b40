"""Memory visibility: privacy and cross-server policy."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hookspecs.markers import hookspec

if TYPE_CHECKING:
    from hookspecs.types import VisibilityPolicy


class VisibilitySpecs:
    @hookspec
    def stm_visibility_policies(self) -> Iterable[VisibilityPolicy]:
        """Offer policies that may hide other-channel memories.

        When: once per plugin set; each policy is then called for every
        candidate other-channel memory as ``policy(entry, ctx)``, *before* the
        sort and the cap, so hidden entries use up no slot. The built-in policy
        enforces private channels (with thread inheritance and the bypass),
        keeps DM memories out of servers and other servers' private channels
        out of folded recall. A policy that hides whole channels of the
        turn's own server may declare them with
        :func:`hookspecs.types.hides_channels`, so that a build in a big
        server leaves their entries out without calling it for each.

        :return: an iterable of callables ``(MemoryRecord, VisibilityContext) ->
            bool | None``; any ``False`` hides the entry.

        Example (hide channels whose id is listed in a set)::

            @hookimpl
            def stm_visibility_policies():
                return [lambda entry, ctx: False if entry.key.channel_id in HIDDEN else None]
        """
        raise NotImplementedError
