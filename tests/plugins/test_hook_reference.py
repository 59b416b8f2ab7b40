"""The hook reference (docs/plugins/hooks.md) cannot drift from ``hookspecs/``:
every hook has a section whose heading is its exact signature, states whether
it is firstresult, and carries an example that registers as a valid plugin."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hookspecs import PROJECT_NAME, SPEC_CLASSES
from stm_core.plugins import create_plugin_manager, register_host_plugin

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "plugins" / "hooks.md"
HEADING = re.compile(r"^### `((stm_\w+)\(.*\).*)`$", re.MULTILINE)


def spec_functions() -> dict[str, tuple[type, Callable[..., Any]]]:
    return {name: (spec, fn) for spec in SPEC_CLASSES for name, fn in vars(spec).items()
            if name.startswith(f"{PROJECT_NAME}_")}


def expected_signature(fn: Callable[..., Any]) -> str:
    """``name(arg: type, ...) -> return``, from the spec's own annotations."""
    signature = inspect.signature(fn)
    params = ", ".join(f"{p.name}: {p.annotation}" for p in signature.parameters.values()
                       if p.name != "self")
    return f"{fn.__name__}({params}) -> {signature.return_annotation}"


def sections() -> dict[str, tuple[str, str]]:
    """hook name -> (heading signature, section text up to the next heading)."""
    text = REFERENCE.read_text()
    found: dict[str, tuple[str, str]] = {}
    matches = list(HEADING.finditer(text))
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        end = following.start() if following else len(text)
        next_h2 = text.find("\n## ", match.end(), end)
        body = text[match.end():next_h2 if next_h2 != -1 else end]
        assert match.group(2) not in found, f"{match.group(2)} is documented twice"
        found[match.group(2)] = (match.group(1), body)
    return found


def test_every_hook_is_documented_and_nothing_else() -> None:
    assert sorted(sections()) == sorted(spec_functions())


@pytest.mark.parametrize("hook", sorted(spec_functions()))
def test_the_heading_is_the_exact_signature(hook: str) -> None:
    _spec, fn = spec_functions()[hook]
    heading, _body = sections()[hook]
    assert heading == expected_signature(fn)


@pytest.mark.parametrize("hook", sorted(spec_functions()))
def test_the_section_states_the_spec_module_and_firstresult(hook: str) -> None:
    spec, fn = spec_functions()[hook]
    _heading, body = sections()[hook]
    firstresult = getattr(fn, f"{PROJECT_NAME}_spec")["firstresult"]
    module_path = spec.__module__.replace(".", "/") + ".py"
    assert f"Spec: `{module_path}` · **firstresult:** {'yes' if firstresult else 'no'}" in body
    prose = " ".join(body.split())
    assert ("Stops at the first non-None result" in prose) == firstresult


@pytest.mark.parametrize("hook", sorted(spec_functions()))
def test_the_example_is_a_valid_plugin_implementing_the_hook(hook: str) -> None:
    _heading, body = sections()[hook]
    blocks = re.findall(r"```python\n(.*?)```", body, re.DOTALL)
    assert len(blocks) == 1, f"{hook} needs exactly one example"
    module = ModuleType(f"example_{hook}")
    exec(compile(blocks[0], f"<{hook} example>", "exec"), module.__dict__)
    pm = create_plugin_manager(load_entrypoints=False, environ={})

    register_host_plugin(pm, module)  # raises on an unknown hook or a bad signature

    implemented = {caller.name for caller in pm.get_hookcallers(module) or ()}
    assert implemented == {hook}
