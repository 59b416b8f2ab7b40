"""``stm_core.inject`` is a plain package: its submodules import as they read,
the function is ``stm_core.inject.inject``, and calling the package itself (the
0.1 spelling, when the name was the function) still works with a warning."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import pytest

from stm_core.models import ContextItem, StmContext

MESSAGES = [{"role": "system", "content": "be kind"}, {"role": "user", "content": "hi"}]


def context() -> StmContext:
    return StmContext(memory_items=(ContextItem(text="Goals: the tower", kind="other_channels"),),
                      memory_injection_depth=-1)


def run_fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c",
                           textwrap.dedent(code)], check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.mark.parametrize("first", ["import stm_core", "from stm_core import Turn",
                                   "from stm_core.inject import inject", "pass"])
def test_a_submodule_imports_as_it_reads_whatever_was_imported_before(first: str) -> None:
    out = run_fresh(f"""
        {first}
        import importlib, pkgutil, sys
        import stm_core.inject.gemini as gemini
        import stm_core
        package = sys.modules["stm_core.inject"]
        found = [gemini is sys.modules["stm_core.inject.gemini"], stm_core.inject is package]
        for sub in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"stm_core.inject.{{sub.name}}")
            found.append(getattr(stm_core.inject, sub.name) is module)
        print(all(found), len(found))
    """)
    ok, checked = out.split()
    assert ok == "True" and int(checked) >= 10


def test_the_function_imports_from_the_package_without_a_warning() -> None:
    out = run_fresh("""
        from stm_core.inject import inject
        from stm_core import find_injected, insert_at_dialogue_depth
        import stm_core.inject as package
        print(inject is package.inject, callable(inject), type(inject).__name__,
              insert_at_dialogue_depth is package.insert_at_dialogue_depth,
              find_injected is package.find_injected)
    """)
    assert out == "True True function True True"


def test_calling_the_package_warns_and_answers_as_the_function() -> None:
    import stm_core
    import stm_core.inject as package
    from stm_core.inject import inject

    expected = inject(MESSAGES, context())
    with pytest.warns(DeprecationWarning, match="from stm_core.inject import inject") as caught:
        got = package(MESSAGES, context())  # type: ignore[operator]
    assert got == expected and len(got) == 3
    assert caught[0].filename == __file__
    assert stm_core.inject is package  # `from stm_core import inject` is the package too


def test_the_package_called_with_wrong_arguments_raises_the_function_s_typed_error() -> None:
    import stm_core.inject as package
    from stm_core.errors import ValidationError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ValidationError):
            package("not a list", context())  # type: ignore[operator]


def test_the_top_level_name_is_the_package_before_and_after_any_import() -> None:
    out = run_fresh("""
        import sys, types
        import stm_core
        first = stm_core.inject
        import stm_core.inject.walk
        print(isinstance(first, types.ModuleType), first is sys.modules["stm_core.inject"],
              stm_core.inject is first)
    """)
    assert out == "True True True"
