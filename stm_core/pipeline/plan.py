"""What a build takes from the plugin set, looked up once per set.

The mention converters, the visibility policies, the token counters and the
render memo depend only on the registered plugins, so a build reads them from
one :class:`BuildPlan`, made again whenever the plugin set changes
(:meth:`stm_core.plugins.hooks.Hooks.plugin_set_memo`): a plugin registered or removed
between two turns is seen by the next one, and its texts are never served
from the memo of the set before.
"""

from __future__ import annotations

import attrs

from hookspecs.types import MentionConverter, TokenCounter, VisibilityPolicy
from stm_core.pipeline.render_memo import RenderMemo, new_render_memo
from stm_core.plugins.hooks import Hooks

#: Providers whose counter a plan keeps before it starts over (the names are
#: the host's).
MAX_PROVIDERS = 64


@attrs.frozen
class BuildPlan:
    """The parts of a build that depend on the plugin set alone."""

    #: ``stm_mention_converters``, in hook order (stage 10).
    converters: tuple[MentionConverter, ...]
    #: ``stm_visibility_policies``, in hook order (stage 5).
    policies: tuple[VisibilityPolicy, ...]
    #: The texts rows rendered to under this plugin set (stages 7 and 8).
    memo: RenderMemo
    #: ``provider -> stm_token_counter``'s answer (stage 9b); a build reads
    #: it here and asks :meth:`token_counter` when it is missing.
    counters: dict[str, TokenCounter] = attrs.field(factory=dict)

    def token_counter(self, hooks: Hooks, provider: str) -> TokenCounter:
        """The counter of ``provider`` (:meth:`Hooks.token_counter`), kept."""
        if len(self.counters) >= MAX_PROVIDERS:
            self.counters.clear()
        count = self.counters[provider] = hooks.token_counter(provider)
        return count


#: The plan's name among the plugin set's memos: a build reads it with
#: ``hooks.plugin_set_memo(PLAN, make_plan, hooks)``.
PLAN = "build plan"


def make_plan(hooks: Hooks) -> BuildPlan:
    """The plan of the plugin set ``hooks`` has now (made on its first build)."""
    return BuildPlan(converters=hooks.mention_converters(),
                     policies=hooks.visibility_policies(), memo=new_render_memo())
