"""The built-in admin permission policy (``trylast``), as in the original:

* a server's settings and shared memory: anyone may view, changing them needs
  the manage permission (``Actor.can_manage``);
* a whole channel's rows: clearing them needs the manage permission;
* one user's own data (cross-server opt-in, their user-scope rows, a
  direct-message memory): that user only, for viewing and changing.
"""

from __future__ import annotations

from hookspecs import hookimpl
from hookspecs.types import Actor, AdminAction


@hookimpl(trylast=True)
def stm_admin_permission(actor: Actor, action: AdminAction) -> bool | None:
    if action.scope == "user":
        return action.user_id is not None and actor.user_id == action.user_id
    if not action.writes:
        return True
    return actor.can_manage
