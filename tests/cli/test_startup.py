"""A quick command imports no slow package, and leaves the collector as it was.

Speed itself is measured in ``bench/`` (``cli_startup_ms``); these tests name
the packages ``stm server params show`` must not import, each of which once
made it slower, and check the garbage collector's state around a command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: Packages the command must not import: the slow third-party ones (SQLite
#: statements are precompiled; config files, the demo's drawing and plugin
#: metadata are for other commands).
NOT_LOADED = ("sqlalchemy", "cattrs", "rich", "importlib.metadata")


def run_fresh(code: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "STM_VERIFY_PRECOMPILED_SQL"}
    # Run where an operator would: not in a source checkout, whose egg-info
    # folder would send the version lookup to importlib.metadata.
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True,
                          capture_output=True, text=True, env=env, cwd=cwd)
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    stm = Path(sys.executable).with_name("stm")
    subprocess.run([str(stm), "--db", url, "db", "upgrade"], check=True, capture_output=True)
    return url


def test_params_show_imports_no_slow_package(db_url: str, tmp_path: Path) -> None:
    out = run_fresh(f"""
        import json, sys
        from stm_core.cli import main
        try:
            main(["--db", {db_url!r}, "server", "params", "show", "42"])
        except SystemExit as exc:
            assert not exc.code, exc.code
        print(json.dumps(sorted(m for m in sys.modules if m.startswith({NOT_LOADED!r}))))
    """, tmp_path)
    assert json.loads(out) == []


def test_the_names_the_command_skipped_still_load_on_first_use(db_url: str,
                                                               tmp_path: Path) -> None:
    out = run_fresh(f"""
        import stm_core, stm_core.admin as admin
        from stm_core.cli import main
        try:
            main(["--db", {db_url!r}, "server", "params", "show", "42"])
        except SystemExit:
            pass
        from stm_core.admin.history import MemoryRestore
        from stm_core.admin.values import ServerPrompts
        from stm_core.inject import inject
        print(admin.MemoryRestore is MemoryRestore, admin.ServerPrompts is ServerPrompts,
              admin.history.MemoryRestore is MemoryRestore, stm_core.inject.inject is inject)
    """, tmp_path)
    assert out == "True True True True"


@pytest.mark.parametrize("host_turned_it_off", [False, True])
def test_a_command_run_in_process_leaves_the_collector_as_it_found_it(
        db_url: str, tmp_path: Path, host_turned_it_off: bool) -> None:
    out = run_fresh(f"""
        import gc
        from stm_core.cli import main
        if {host_turned_it_off!r}:
            gc.disable()
        seen = []
        for args in (["--db", {db_url!r}, "server", "params", "show", "42"], ["--version"]):
            try:
                main(args)
            except SystemExit:
                pass
            seen.append((gc.isenabled(), gc.get_freeze_count()))
        print(seen)
    """, tmp_path)
    enabled = not host_turned_it_off
    assert out == str([(enabled, 0), (enabled, 0)])


def test_the_collector_rests_until_the_store_is_open(db_url: str, tmp_path: Path) -> None:
    """Start-up's objects are frozen when collecting resumes, so no pass walks
    them; before that, none runs at all."""
    out = run_fresh(f"""
        import gc
        import stm_core.cli.session as session
        from stm_core.cli import main
        seen = []
        gc.callbacks.append(lambda phase, info: phase == "start" and seen.append("collect"))
        opened = session.open_store
        def open_store(*args, **kwargs):
            seen.append(("opening", gc.isenabled()))
            return opened(*args, **kwargs)
        session.open_store = open_store
        try:
            main(["--db", {db_url!r}, "server", "params", "show", "42"])
        except SystemExit:
            pass
        print(seen[:1])
    """, tmp_path)
    assert out == "[('opening', False)]"
