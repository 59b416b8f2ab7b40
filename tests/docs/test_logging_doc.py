"""docs/logging.md lists exactly the loggers the code uses."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "logging.md"
GET_LOGGER = re.compile(r'getLogger\("(stm\.[\w.]+)"\)')
ROW = re.compile(r"^\| `(stm\.[\w.]+)` \|", re.MULTILINE)


def loggers_in_code() -> set[str]:
    found: set[str] = set()
    for package in ("stm_core", "stm_plugins"):
        for path in (ROOT / package).rglob("*.py"):
            found |= set(GET_LOGGER.findall(path.read_text(encoding="utf-8")))
    return found


def test_every_logger_has_a_row_and_every_row_a_logger() -> None:
    in_code = loggers_in_code()
    documented = set(ROW.findall(DOC.read_text(encoding="utf-8")))
    assert "stm.admin" in in_code and "stm.storage.sqlite" in in_code
    assert in_code == documented, (sorted(in_code - documented), sorted(documented - in_code))
