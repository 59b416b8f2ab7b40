"""The mutation score of ``make mutate`` (tools/mutation_score.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "mutation_score.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_score", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_equivalents_are_read_from_every_testing_page(tmp_path: Path) -> None:
    (tmp_path / "testing.md").write_text(
        "# Testing\n\n| mutant | why |\n|---|---|\n| `a.x__mutmut_1` | same rule twice |\n")
    (tmp_path / "testing-admin-equivalents.md").write_text(
        "| `a.y__mutmut_2` | log text |\n| not a mutant | ignored |\n")
    (tmp_path / "other.md").write_text("| `a.z__mutmut_3` | not a testing page |\n")
    assert load().documented_equivalents(tmp_path) == {"a.x__mutmut_1", "a.y__mutmut_2"}


def test_the_score_leaves_documented_equivalents_out() -> None:
    statuses = {"m__mutmut_1": "killed", "m__mutmut_2": "timeout", "m__mutmut_3": "survived",
                "m__mutmut_4": "survived", "m__mutmut_5": "no tests"}
    report = load().score(statuses, {"m__mutmut_4", "m__mutmut_9"})
    assert (report["mutants"], report["equivalent"], report["killed"]) == (5, 1, 2)
    assert report["score"] == 0.5  # 2 killed of 4 counted
    assert report["survivors"] == ["m__mutmut_3", "m__mutmut_5"]
    assert report["stale_equivalents"] == ["m__mutmut_9"]



def test_fresh_process_verdicts_replace_mutmuts_for_code_run_at_import(tmp_path: Path) -> None:
    recheck = tmp_path / "fresh-recheck.json"
    statuses = {"imp__mutmut_1": "survived", "imp__mutmut_2": "no tests", "m__mutmut_1": "killed"}
    assert load().with_fresh_verdicts(statuses, recheck) == statuses  # no recheck yet
    recheck.write_text('{"imp__mutmut_1": "killed", "imp__mutmut_2": "survived"}')
    assert load().with_fresh_verdicts(statuses, recheck) == {
        "imp__mutmut_1": "killed", "imp__mutmut_2": "survived", "m__mutmut_1": "killed"}


def load_recheck() -> ModuleType:
    path = SCRIPT.with_name("fresh_recheck.py")
    spec = importlib.util.spec_from_file_location("fresh_recheck", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_recheck_runs_only_the_changed_tests_of_the_mutants_module() -> None:
    recheck = load_recheck()
    changed = ["tests/admin/test_new.py", "tests/record/test_x.py", "tests/adminx/test_y.py"]
    assert recheck.tests_for("stm_core.admin.api.xǁAdminǁ_key__mutmut_3", changed) == [
        "tests/admin/test_new.py"]
    assert recheck.tests_for("stm_core.pipeline.build.x__build__mutmut_1", changed) is None
    # Code run at import: its own tests, whatever changed.
    assert recheck.tests_for("stm_core.inject.base.x_each_turn__mutmut_2", []) == [
        "tests/inject", "tests/sdk"]
