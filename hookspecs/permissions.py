"""Who may run an admin action."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookspecs.markers import hookspec

if TYPE_CHECKING:
    from hookspecs.types import Actor, AdminAction


class PermissionSpecs:
    @hookspec(firstresult=True)
    def stm_admin_permission(self, actor: Actor, action: AdminAction) -> bool | None:
        """Decide whether ``actor`` may perform ``action``.

        When: at the start of every ``stm.admin`` call made with ``actor=``
        (calls without an actor come from the host's own code or the operator's
        ``stm`` command and are not checked). Not memoized.

        :param actor: who is acting, as the host states it (``user_id``,
            ``can_manage``).
        :param action: the call (``name``, ``writes``, ``scope`` and the ids it
            concerns).
        :return: ``True`` to allow, ``False`` to refuse (the call raises
            :class:`~stm_core.errors.PermissionDenied`), or ``None`` to let the
            next plugin decide. Stops at the first non-None answer; the
            built-in policy is ``trylast``: viewing a server's settings or
            shared memory is open, changing them needs ``can_manage``, and a
            user's own data (preferences, direct-message memory, their rows)
            is theirs alone.

        Example (bot owners may do anything)::

            @hookimpl
            def stm_admin_permission(actor, action):
                return True if actor.user_id in OWNERS else None
        """
        raise NotImplementedError
