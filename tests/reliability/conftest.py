"""Reliability tests: scale, and the figures ``docs/reliability.md`` reports.

``STM_RELIABILITY_SCALE=full`` (``make reliability``) runs the long versions;
the default is the share CI runs on every push. With
``STM_RELIABILITY_FIGURES=path.json`` the figures of the run (cases generated,
kills survived, faults injected, writes lost, staleness percentiles) are
written there at the end of the session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIGURES_ENV = "STM_RELIABILITY_FIGURES"
_FIGURES: dict[str, Any] = {}


@pytest.fixture(scope="session")
def figures() -> Iterator[dict[str, Any]]:
    """Record a figure with ``figures["name"] = value`` (or add to a count)."""
    yield _FIGURES


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get(FIGURES_ENV)
    if target and _FIGURES:
        path = Path(target)
        previous = json.loads(path.read_text()) if path.exists() else {}
        previous.update(_FIGURES)
        path.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
