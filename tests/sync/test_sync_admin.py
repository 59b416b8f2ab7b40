"""``SyncStm.admin`` has real methods: one per public ``Admin`` coroutine, with
its signature, so ``dir()``, editors and mypy see them. The class is generated
by ``tools/gen_sync_admin.py``; these tests keep it in step with ``Admin``."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

from stm_core import open_store_sync
from stm_core.admin.api import Admin
from stm_core.sync import SyncAdmin

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tools" / "gen_sync_admin.py"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_sync_admin", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_admin_calls() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in vars(Admin).items()
            if not name.startswith("_") and inspect.iscoroutinefunction(fn)}


def test_the_generated_file_is_what_the_generator_writes_today() -> None:
    gen = generator()
    assert gen.TARGET.read_text(encoding="utf-8") == gen.render(), (
        "stm_core/sync/admin.py is out of step with Admin: run "
        "`python tools/gen_sync_admin.py`")


def test_every_admin_call_has_a_blocking_twin_with_its_signature() -> None:
    calls = public_admin_calls()
    assert len(calls) > 20  # the admin API, not an empty class
    twins = {name: inspect.signature(fn) for name, fn in vars(SyncAdmin).items()
             if not name.startswith("_") and inspect.isfunction(fn)}
    assert twins == calls
    for name in calls:
        assert not inspect.iscoroutinefunction(getattr(SyncAdmin, name))


def test_dir_lists_the_methods_and_each_blocks_and_answers() -> None:
    with open_store_sync("memory://", load_entrypoints=False) as stm:
        listed = set(dir(stm.admin))
        assert set(public_admin_calls()) <= listed
        stm.admin.set_prompts("g1", nudge="Refresh {short_term_memory_tool}.")
        assert stm.admin.prompts("g1").nudge.text == "Refresh {short_term_memory_tool}."
        assert stm.admin.list_servers() == ("g1",)
