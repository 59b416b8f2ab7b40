"""Plugin modules used by the loader tests, as source text written to disk."""

#: A valid plugin module: a gate and a render mode.
GATE_PLUGIN = '''
from hookspecs import hookimpl

@hookimpl
def stm_tool_available(provider):
    return False if provider == "acme-lite" else None
'''

RENDER_PLUGIN = '''
from hookspecs import hookimpl
from stm_core.plugin_types import RenderMode

@hookimpl
def stm_register_render_modes():
    return [RenderMode(key="digest", render=lambda parts: "")]
'''

#: Implements a hook with an argument its spec does not have.
BAD_SIGNATURE_PLUGIN = '''
from hookspecs import hookimpl

@hookimpl
def stm_tool_available(provider, temperature):
    return None
'''

#: Implements a hook that does not exist (a typo).
UNKNOWN_HOOK_PLUGIN = '''
from hookspecs import hookimpl

@hookimpl
def stm_tool_availabel(provider):
    return False
'''

RAISING_PLUGIN = '''
raise RuntimeError("acme credentials missing")
'''
