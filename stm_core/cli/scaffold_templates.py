"""The text of the files ``stm plugins new`` writes, one example per hook concern.

Templates use :class:`string.Template` placeholders (``$package``, ``$slug``,
...), never ``str.format``, so the Python braces in them stay as written.
Each concern has the module code (a commented, working implementation) and,
where a behaviour is easy to show, a test on :mod:`stm_core.testing`.
"""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class Concern:
    """One hook concern an author may pick for a new plugin."""

    key: str
    summary: str
    #: Names the module imports from ``stm_core`` besides ``hookimpl``.
    stm_names: tuple[str, ...]
    code: str
    #: Whole import lines for names that live elsewhere in stm.
    extra_imports: tuple[str, ...] = ()
    test: str = ""


GATE = Concern(key="gate", summary="tool gate: withhold the memory tool for a provider",
               stm_names=(), code='''
#: Providers that cannot call tools: no memory tool, and so no nudge, on their turns.
NO_TOOL_PROVIDERS = frozenset({"$slug-lite"})


@hookimpl
def stm_tool_available(provider: str) -> bool | None:
    # Tool gate. False withholds the tool, None abstains (True allows, but any
    # False from any plugin wins). Take only the parameters you need, by name,
    # without defaults: provider, has_tools, stm_enabled, explicit_long_term_intent.
    return False if provider in NO_TOOL_PROVIDERS else None
''', test='''

async def test_the_lite_provider_is_offered_no_tool(stm_memory_store: Stm,
                                                    make_turn: MakeTurn) -> None:
    assert await stm_memory_store.tool_available(make_turn(provider="$slug-lite")) is False
    assert await stm_memory_store.tool_available(make_turn(provider="openai")) is True
''')

PHRASING = Concern(key="phrasing", summary="nudge and tool description for a provider",
                   stm_names=(), code='''
#: The provider key hosts put in Turn.provider for the model this plugin phrases for.
PROVIDER = "$slug"
NUDGES = {
    "summary": "[System: $title note: after replying, call {short_term_memory_tool} "
               "with a fresh summary of this conversation.]",
    "category": "[System: $title note: after replying, call {short_term_memory_tool} "
                "and refresh: {category_labels}.]",
}


@hookimpl
def stm_nudge_template(provider: str, mode: str) -> str | None:
    # firstresult: the first non-None answer wins, the built-in default comes last.
    # Macros such as {short_term_memory_tool} are expanded by stm afterwards.
    return NUDGES.get(mode) if provider == PROVIDER else None


@hookimpl
def stm_tool_description(provider: str) -> str | None:
    return "Keep short notes about this conversation." if provider == PROVIDER else None
''', test='''

async def test_the_provider_gets_this_plugins_nudge(stm_memory_store: Stm,
                                                    make_turn: MakeTurn) -> None:
    await stm_memory_store.admin.set_server_params("3001", refresh_cadence=1)
    await stm_memory_store.record_turn(
        make_turn(), [HistoryMessage(author_type="user", content="hi", speaker_name="Alice")],
        [PersonaResponse(content="Hello!", persona_name="Assistant")])

    context = await stm_memory_store.build_context(make_turn(provider="$slug"))

    assert context.nudge_item is not None
    assert context.nudge_item.text.startswith("[System: $title note:")
''')

RENDER_MODE = Concern(key="render-mode", summary="a render mode for other channels' memories",
                      stm_names=("OtherChannelParts", "RenderMode"), code='''
def render_compact(parts: OtherChannelParts) -> str:
    # One block per other channel: the summary (or category lines) only.
    # Headers end with a newline; each block ends with "]" and a blank line.
    if parts.body is None:
        return ""  # nothing summarised there yet: show nothing for this channel
    return f"{parts.memory_header}{parts.body}]\\n\\n"


@hookimpl
def stm_register_render_modes() -> Iterable[RenderMode]:
    # A server picks it with admin.set_server_params(server_id, render_mode=...),
    # or every server by default with STM_DEFAULT_RENDER_MODE.
    return [RenderMode(key="${package}_compact", render=render_compact,
                       description="other channels' summaries only, no raw lines")]
''', test='''

async def test_the_compact_mode_shows_only_summaries(stm_memory_store: Stm,
                                                     make_turn: MakeTurn) -> None:
    await stm_memory_store.admin.set_server_params("3001", render_mode="${package}_compact")
    elsewhere = make_turn(channel_id="2002")
    assert (await stm_memory_store.apply_tool_call(elsewhere, {"summary": "cake at 5"})).ok

    context = await stm_memory_store.build_context(make_turn(channel_id="2001"))

    [block] = [item.text for item in context.memory_items if item.kind == "other_channels"]
    # stm strips the whitespace around the joined blocks.
    assert block.count("[System:") == 1 and block.endswith("cake at 5]")
''')

MACROS = Concern(key="macros", summary="prompt macro values for a provider",
                 stm_names=(), code='''
@hookimpl
def stm_prompt_macros(provider: str) -> Mapping[str, str] | None:
    # Values of {macros} in the nudge, tool description and category
    # descriptions. The most recently registered plugin wins a clash.
    return {"memory_tool": "`save_note`"} if provider == "$slug" else None
''')

MENTIONS = Concern(key="mentions", summary="a converter applied to every text stm emits",
                   stm_names=("Turn",), code='''
def quiet_everyone(text: str, turn: Turn) -> str:
    # Called for every memory block and nudge; must return the text.
    return text.replace("@everyone", "everyone")


@hookimpl
def stm_mention_converters() -> Iterable[Callable[[str, Turn], str]]:
    return [quiet_everyone]
''')

VISIBILITY = Concern(key="visibility", summary="a policy that hides other channels' memories",
                     stm_names=("VisibilityContext",),
                     extra_imports=("from stm_core.storage.records import MemoryRecord",),
                     code='''
#: Channel ids whose memories never show up in other channels.
HIDDEN_CHANNELS: frozenset[str] = frozenset()


def hide_listed_channels(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
    # False hides the entry (any False wins), None has no opinion.
    return False if entry.key.channel_id in HIDDEN_CHANNELS else None


@hookimpl
def stm_visibility_policies() -> Iterable[Callable[[MemoryRecord, VisibilityContext],
                                                   bool | None]]:
    return [hide_listed_channels]
''')

TOOL_FORMAT = Concern(key="tool-format", summary="a tool-declaration format for a provider",
                      stm_names=("ToolFormat", "ToolSchema"), code='''
def render_tool(schema: ToolSchema) -> dict[str, Any]:
    # Must return a new dict each call; stm hands it to the host as it is.
    return {"name": schema.name, "about": schema.description,
            "inputs": [name for name, _ in schema.properties]}


@hookimpl
def stm_register_tool_formats() -> Iterable[ToolFormat]:
    # The default format of every provider listed in providers.
    return [ToolFormat(key="$package", render=render_tool, providers={"$slug"})]
''')

ANNOTATIONS = Concern(key="annotations", summary="annotations stripped before messages are stored",
                      stm_names=(), code='''
@hookimpl
def stm_annotation_patterns() -> Iterable[str]:
    # Regular expressions removed from every message record_turn stores.
    return [r"\\[System: Typing indicator[^\\]]*\\]"]
''')

PERMISSIONS = Concern(key="permissions", summary="who may run admin calls",
                      stm_names=("Actor", "AdminAction"), code='''
#: User ids allowed every admin action.
OWNERS: frozenset[str] = frozenset()


@hookimpl
def stm_admin_permission(actor: Actor, action: AdminAction) -> bool | None:
    # firstresult: True allows, False refuses, None lets the next policy decide
    # (the built-in one comes last).
    return True if actor.user_id in OWNERS else None
''')

CONCERNS: dict[str, Concern] = {c.key: c for c in (
    GATE, PHRASING, RENDER_MODE, MACROS, MENTIONS, VISIBILITY, TOOL_FORMAT, ANNOTATIONS,
    PERMISSIONS)}
DEFAULT_CONCERNS = ("gate", "phrasing", "render-mode")

PYPROJECT = '''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$distribution"
version = "0.1.0"
description = "An stm plugin: $concern_list."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["stm-core>=$stm_version"]

[project.optional-dependencies]
test = ["pytest>=8", "pytest-asyncio>=0.23"]

# stm finds installed plugins through the "stm" entry-point group.
[project.entry-points.stm]
$slug = "$package"

[tool.setuptools]
packages = ["$package"]

[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
testpaths = ["tests"]
# The tests import the package from this checkout, installed or not.
pythonpath = ["."]
'''

MODULE = '''"""$title: an stm plugin.

Each function marked @hookimpl implements one stm hook; see the hook reference
(docs/plugins/hooks.md in stm) for every parameter and return contract. Hooks
are plain (not async) functions, cheap and pure: stm memoizes their answers.
"""

from __future__ import annotations

$imports$code'''

CONFTEST = '''# The stm test kit: stm_plugin_manager, register_plugin, stm_memory_store,
# make_turn and stm_clock.
pytest_plugins = ["stm_core.testing"]
'''

TEST = '''"""$title, tested through a real in-memory stm store with the stm test kit."""

from __future__ import annotations

import pytest
from stm_core import HistoryMessage, PersonaResponse, Stm
from stm_core.testing import MakeTurn, RegisterPlugin

import $package


@pytest.fixture(autouse=True)
def plugin(register_plugin: RegisterPlugin) -> None:
    # Registered as a host registers plugins in code: validated at once.
    register_plugin($package, name="$slug")


async def test_another_channels_lines_show_up(stm_memory_store: Stm,
                                              make_turn: MakeTurn) -> None:
    await stm_memory_store.record_turn(
        make_turn(channel_id="2002"),
        [HistoryMessage(author_type="user", content="hi there", speaker_name="Alice")],
        [PersonaResponse(content="Hello!", persona_name="Assistant")])

    context = await stm_memory_store.build_context(make_turn(channel_id="2001"))

    assert any("hi there" in item.text for item in context.memory_items)
$tests'''

README = '''# $distribution

An [stm](https://pypi.org/project/stm-core/) plugin: $concern_list.

```sh
pip install -e '.[test]'
pytest                      # the plugin's tests, on the stm test kit
stm plugins                 # lists "$slug" once installed
STM_DISABLED_PLUGINS=$slug stm plugins   # turn it off without uninstalling
```

The entry point `$slug` in `pyproject.toml` is how stm finds the plugin. What
each hook may take and return is in stm's hook reference (docs/plugins/hooks.md).
'''
