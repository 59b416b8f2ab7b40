"""The ``update_short_term_memory`` tool: availability, schema, application.

Beside :mod:`stm_core.admin` and :mod:`stm_core.pipeline`: the tool's rules
(when it is offered, what its schema says, how a call becomes a write) live
here; its writes go through the engine, its format rules come from the plugin
wing (:mod:`stm_core.plugins.providers`).
"""

TOOL_NAME = "update_short_term_memory"
