"""``stm_core``'s public names are the documented objects, whatever else has been
imported before; the facade's names (the store) load when first read, so the
``stm`` command, which lives in this package, starts without them."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import stm_core


def run_fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def test_every_public_name_is_its_object_even_after_every_submodule_is_imported() -> None:
    out = run_fresh("""
        import importlib, pkgutil, types
        import stm_core
        for info in pkgutil.walk_packages(stm_core.__path__, "stm_core."):
            if not info.name.startswith(("stm_core.testing", "stm_core.cli.demo")):
                importlib.import_module(info.name)
        # inject is the one public name that is a subpackage (tests/inject/test_package.py)
        wrong = [n for n in stm_core.__all__
                 if isinstance(getattr(stm_core, n), types.ModuleType) and n != "inject"]
        print(wrong)
    """)
    assert out == "[]"


def test_importing_the_package_loads_no_store_admin_or_storage() -> None:
    out = run_fresh("""
        import sys
        import stm_core
        heavy = ("stm_core.store", "stm_core.admin", "stm_core.sync", "stm_plugins")
        print(sorted(m for m in sys.modules if m.startswith(heavy)))
    """)
    assert out == "[]"


def test_names_load_on_first_use_and_are_listed() -> None:
    from stm_core import Turn, open_store
    from stm_core.models import Turn as HomeTurn
    from stm_core.store import open_store as home_open_store

    assert (Turn, open_store) == (HomeTurn, home_open_store)
    assert set(stm_core.__all__) <= set(dir(stm_core))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        stm_core.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_admin_names_are_their_objects() -> None:
    out = run_fresh("""
        import stm_core.admin as admin
        from stm_core.admin.config_io import FORMAT_NAME, FORMAT_VERSION
        from stm_core.admin.history import MemoryRestore
        from stm_core.admin.params import ServerParams
        from stm_core.admin.user_data import ForgetResult
        from stm_core.admin.values import ClearResult
        import stm_core.admin.values as values
        print(admin.FORMAT_NAME == FORMAT_NAME, admin.FORMAT_VERSION == FORMAT_VERSION,
              admin.MemoryRestore is MemoryRestore, admin.ForgetResult is ForgetResult,
              admin.ClearResult is ClearResult, admin.ServerParams is values.ServerParams
              is ServerParams, admin.history.MemoryRestore is MemoryRestore,
              set(admin.__all__) <= set(dir(admin)))
    """)
    assert out == "True True True True True True True True"


def test_a_package_walked_as_a_plugin_does_not_load_its_lazy_modules() -> None:
    """pluggy reads every name of a plugin module: a lazily bound submodule is
    bound on its package only once it has run, so registering never loads it."""
    out = run_fresh("""
        import sys
        import stm_plugins.sqlalchemy_storage.base  # binds the statement builders lazily
        from stm_core.plugins import create_plugin_manager
        create_plugin_manager(load_entrypoints=False)
        print(sorted(m for m in sys.modules if m.startswith("sqlalchemy")))
    """)
    assert out == "[]"


def test_every_admin_method_s_annotations_resolve_for_introspection() -> None:
    """Documentation tools and hosts read ``typing.get_type_hints`` of the API."""
    import inspect
    import typing

    from stm_core.admin import Admin

    methods = [m for name, m in vars(Admin).items()
               if not name.startswith("_") and inspect.iscoroutinefunction(m)]
    assert len(methods) > 20
    for method in methods:
        assert "return" in typing.get_type_hints(inspect.unwrap(method)), method.__name__
