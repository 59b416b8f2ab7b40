"""Mutants of code that runs at import, tested in fresh processes.

mutmut switches a mutant on inside a process that has already imported
``stm_core``, so a function that only runs at import (the decorator that
installs the admin argument checks) is never mutated there and mutmut reports
its mutants as surviving. Here each such mutant gets a fresh interpreter with
the mutant switched on from the first import, and the tests that prove the
behaviour the import sets up. The outcome goes to ``build/fresh-recheck.json``,
which ``tools/mutation_score.py`` reads in place of mutmut's verdict for these
mutants. Run from the project root after ``mutmut run`` (``make mutate``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Functions that run only at import, with the tests that observe their work
#: (found by looking for calls at module level in the mutated modules).
IMPORT_TIME = {
    "stm_core.admin.argument_types.x_checked_arguments": [
        "tests/reliability/test_hostile_arguments.py", "tests/admin/test_admin_params.py"],
    "stm_core.admin.argument_types.x__wrap": [
        "tests/reliability/test_hostile_arguments.py", "tests/admin/test_admin_params.py"],
    # Builds each message format's turn rule when its module loads.
    "stm_core.inject.base.x_each_turn": ["tests/inject", "tests/sdk"],
}
_NAME = re.compile(r"^(\S+__mutmut_\d+):")


def mutants_of(function: str, mutmut: str) -> list[str]:
    out = subprocess.run([mutmut, "results", "--all", "true"], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    names = (m.group(1) for line in out.splitlines() if (m := _NAME.match(line.strip())))
    return sorted(n for n in names if n.startswith(function + "__mutmut_"))


def killed(mutant: str, tests: list[str]) -> bool:
    env = {k: v for k, v in os.environ.items()
           if k not in ("STM_TEST_POSTGRES_URL", "STM_REQUIRE_POSTGRES")}
    env["MUTANT_UNDER_TEST"] = mutant
    done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                           *tests], cwd=ROOT / "mutants", env=env, capture_output=True)
    return done.returncode != 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mutmut", default=str(Path(sys.executable).with_name("mutmut")))
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "fresh-recheck.json")
    args = parser.parse_args()
    verdicts: dict[str, str] = {}
    for function, tests in IMPORT_TIME.items():
        for mutant in mutants_of(function, args.mutmut):
            verdicts[mutant] = "killed" if killed(mutant, tests) else "survived"
            print(f"{verdicts[mutant]:8} {mutant}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(verdicts, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
