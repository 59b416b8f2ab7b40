"""A hypothetical future version of the phrasing spec, with deprecations
(shown in docs/hook-policy.md)."""

# -- start deprecate-argument --
from hookspecs import hookspec


class PhrasingSpecs:
    @hookspec(firstresult=True, warn_on_impl_args={
        "mode": DeprecationWarning(
            "stm_nudge_template: the 'mode' argument is deprecated since 0.3 and will be "
            "removed in 1.0; take 'memory_mode' instead"),
    })
    def stm_nudge_template(self, provider: str, mode: str, memory_mode: str) -> str | None:
        """(docstring as before, plus a ``.. deprecated:: 0.3`` note on ``mode``)"""
        raise NotImplementedError

    @hookspec(warn_on_impl=DeprecationWarning(
        "stm_tool_description is deprecated since 0.3 and will be removed in 1.0; "
        "implement stm_tool_descriptions instead"))
    def stm_tool_description(self, provider: str, mode: str) -> str | None:
        raise NotImplementedError
# -- end deprecate-argument --
