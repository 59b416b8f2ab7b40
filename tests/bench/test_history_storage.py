"""The history storage measurement runs alone: bytes per row are reported and
stay the same after twice the rewrites (the per-row limit holds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_history_bytes_per_row_are_bounded(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.scenarios_history", "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    history = results["history"]
    assert history["bounded"]
    assert history["bytes_per_row_after_twice_the_writes"] <= (
        history["bytes_per_row_with_history"] * 1.05)
    assert history["bytes_per_row_without_history"] < results["history_bytes_per_row"]
    # Eleven full-length revisions at most, plus page overhead.
    assert results["history_bytes_per_row"] < 12 * 4 * history["summary_chars"]
    assert "## Summary history storage" in (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
