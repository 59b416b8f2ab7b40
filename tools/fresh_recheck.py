"""Mutants tested again in fresh interpreters, after ``mutmut run``.

Two kinds of mutant get a second look, each in a new interpreter with the
mutant switched on from the first import (``MUTANT_UNDER_TEST``):

* mutants of code that runs only at import (the decorator that installs the
  admin argument checks, the message formats' turn rules): mutmut switches a
  mutant on inside a process that has already imported ``stm_core``, so these
  are never active there and mutmut reports them as surviving;
* mutants mutmut reports as surviving or untested, against the test files of
  their module that changed since mutmut copied the tests (``MODULE_TESTS``
  says which are a module's): the tests it ran did not kill them, so only new
  or changed tests can. A full ``make mutate`` changes none, and this part
  does nothing; after new tests are written it spares a second full run.

A mutant is killed when the tests fail with it on; a subset of the suite
failing is enough. The verdicts go to ``build/fresh-recheck.json``, which
``tools/mutation_score.py`` reads in place of mutmut's. Run from the project
root after ``mutmut run`` (``make mutate``), on the source mutmut mutated.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "tests/reliability/test_hostile_arguments.py"
#: Functions that run only at import, with the tests that observe their work
#: (found by looking for calls at module level in the mutated modules).
IMPORT_TIME = {
    "stm_core.admin.argument_types.x_checked_arguments": [HOSTILE,
                                                          "tests/admin/test_admin_params.py"],
    "stm_core.admin.argument_types.x__wrap": [HOSTILE, "tests/admin/test_admin_params.py"],
    # Builds each message format's turn rule when its module loads.
    "stm_core.inject.base.x_each_turn": ["tests/inject", "tests/sdk"],
}
#: The test files of each mutated module (longest prefix wins).
MODULE_TESTS = {
    "stm_core.admin": ["tests/admin", HOSTILE, "tests/reliability/test_permissions.py"],
    "stm_core.inject": ["tests/inject", "tests/sdk"],
    "stm_core.tool": ["tests/tool", "tests/sdk"],
    "stm_core.pipeline": ["tests/pipeline", "tests/rules"],
    "stm_core.text.templates": ["tests/rules", "tests/admin/test_hostile_templates.py"],
    "stm_core.pipeline.record": ["tests/record"],
    "stm_core.engine.cache": ["tests/storage/test_cache_rules.py",
                              "tests/storage/test_cache_epochs.py",
                              "tests/reliability/test_cache_state_machine.py"],
    "stm_core.text.slugs": ["tests/rules", "tests/admin"],
    "stm_core.text.intent": ["tests/tool", "tests/rules"],
}
_RESULT = re.compile(r"^(\S+__mutmut_\d+): (.+?)\s*$")
NOT_KILLED = {"survived", "no tests"}


def statuses(mutmut: str) -> dict[str, str]:
    out = subprocess.run([mutmut, "results", "--all", "true"], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    return {m.group(1): m.group(2) for line in out.splitlines()
            if (m := _RESULT.match(line.strip()))}


def changed_tests(since: str | None = None) -> list[str]:
    """Test files that differ from the copy mutmut ran (new ones included), or
    from commit ``since`` when given (the copy may have been edited by hand)."""
    if since is not None:
        out = subprocess.run(["git", "diff", "--name-only", since, "--", "tests"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        return sorted(p for p in out.split() if Path(p).name.startswith("test_")
                      and (ROOT / p).exists())
    copy = ROOT / "mutants"
    return sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py")
                  if not (copy / path.relative_to(ROOT)).exists()
                  or (copy / path.relative_to(ROOT)).read_bytes() != path.read_bytes())


def tests_for(mutant: str, changed: list[str]) -> list[str] | None:
    function = mutant.rsplit("__mutmut_", 1)[0]
    if function in IMPORT_TIME:
        return IMPORT_TIME[function]
    prefixes = [p for p in MODULE_TESTS if mutant.startswith(p + ".")]
    if not prefixes:
        return None
    homes = MODULE_TESTS[max(prefixes, key=len)]
    mine = [t for t in changed if any(t == h or t.startswith(h + "/") for h in homes)]
    return mine or None


def killed(mutant: str, tests: list[str]) -> bool:
    env = {k: v for k, v in os.environ.items()
           if k not in ("STM_TEST_POSTGRES_URL", "STM_REQUIRE_POSTGRES")}
    env["MUTANT_UNDER_TEST"] = mutant
    # The in-memory and plain variants only: a subset failing is a kill, and the
    # SQLite variant of a test rarely sees a rule its memory twin misses.
    done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                           "-k", "not sqlite", *tests], cwd=ROOT / "mutants", env=env,
                          capture_output=True)
    return done.returncode not in (0, 5)  # 5: no test collected, nothing proven


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mutmut", default=str(Path(sys.executable).with_name("mutmut")))
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "fresh-recheck.json")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--since", help="count test files changed since this commit")
    parser.add_argument("--only", action="append", default=[],
                        help="recheck only mutants whose name starts with this (repeatable)")
    args = parser.parse_args()
    changed = changed_tests(args.since)
    # The tests as they are now, beside the source mutmut mutated.
    shutil.copytree(ROOT / "tests", ROOT / "mutants" / "tests", dirs_exist_ok=True)
    found = statuses(args.mutmut)
    todo = {name: tests for name, status in found.items()
            if (status in NOT_KILLED or name.rsplit("__mutmut_", 1)[0] in IMPORT_TIME)
            and (not args.only or name.startswith(tuple(args.only)))
            and (tests := tests_for(name, changed)) is not None}
    print(f"{len(changed)} test files changed since the run; {len(todo)} mutants to recheck",
          flush=True)
    verdicts: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = pool.map(lambda item: (item[0], killed(*item)), sorted(todo.items()))
        for name, was_killed in outcomes:
            verdicts[name] = "killed" if was_killed else found[name]
            print(f"{verdicts[name]:9} {name}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists():  # an earlier recheck of this run, before more tests were written
        verdicts = {**json.loads(args.out.read_text()), **verdicts}
    args.out.write_text(json.dumps(verdicts, indent=2, sort_keys=True) + "\n")
    print(f"{sum(v == 'killed' for v in verdicts.values())} of {len(verdicts)} killed in fresh "
          f"interpreters", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
