"""The mutation score of the last ``mutmut run`` (``make mutate``).

Score = killed / (mutants - documented equivalents). A mutant counts as killed
when a test failed on it or it timed out (an endless loop is caught too).
Equivalent mutants are listed, each with the reason, in the tables of the
docs/testing*.md files (docs/testing.md and its companions, one per area); a
listed name that no longer exists is reported so the lists stay true.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

KILLED = {"killed", "timeout", "segfault", "caught by type check"}
DOCS = Path(__file__).resolve().parent.parent / "docs"
_RESULT = re.compile(r"^\s*(\S+__mutmut_\d+): (.+?)\s*$")
_EQUIVALENT = re.compile(r"^\|\s*`(\S+__mutmut_\d+)`\s*\|")


def results(mutmut: str) -> dict[str, str]:
    out = subprocess.run([mutmut, "results", "--all", "true"], capture_output=True,
                         text=True, check=True).stdout
    return {m.group(1): m.group(2) for line in out.splitlines() if (m := _RESULT.match(line))}


def documented_equivalents(docs: Path = DOCS) -> set[str]:
    """The mutant names in the tables of every ``testing*.md`` file in ``docs``."""
    return {m.group(1) for page in sorted(docs.glob("testing*.md"))
            for line in page.read_text().splitlines() if (m := _EQUIVALENT.match(line))}


def score(statuses: dict[str, str], equivalents: set[str]) -> dict[str, object]:
    counted = {name: status for name, status in statuses.items() if name not in equivalents}
    killed = sum(status in KILLED for status in counted.values())
    survivors = sorted(name for name, status in counted.items() if status not in KILLED)
    return {
        "mutants": len(statuses),
        "equivalent": len(equivalents & statuses.keys()),
        "killed": killed,
        "score": round(killed / len(counted), 4) if counted else None,
        "by_status": dict(Counter(statuses.values())),
        "survivors": survivors,
        "stale_equivalents": sorted(equivalents - statuses.keys()),
    }


def with_fresh_verdicts(statuses: dict[str, str], recheck: Path) -> dict[str, str]:
    """mutmut's statuses, with the verdicts of ``tools/fresh_recheck.py`` (mutants
    of code run at import, tested in fresh processes) in place of its own."""
    if not recheck.exists():
        return statuses
    fresh = json.loads(recheck.read_text())
    return {name: fresh.get(name, status) for name, status in statuses.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mutmut", default=str(Path(sys.executable).with_name("mutmut")))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--fresh", type=Path, default=DOCS.parent / "build" / "fresh-recheck.json",
                        help="verdicts of tools/fresh_recheck.py")
    args = parser.parse_args()
    statuses = with_fresh_verdicts(results(args.mutmut), args.fresh)
    report = score(statuses, documented_equivalents())
    report["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
