"""The prefix-reuse measurement runs alone and writes its keys: ``stable``
meets its target on the long conversation and beats ``freshness`` on both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_standalone_run_merges_its_keys(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps({"build_ratio": 1.5}), encoding="utf-8")
    (tmp_path / "RESULTS.md").write_text("# Results\n\nother figures\n", encoding="utf-8")
    for _ in range(2):  # a second run replaces its section, never duplicates it
        proc = subprocess.run([sys.executable, "-m", "bench.scenarios_prefix",
                               "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                              text=True, timeout=600, check=False)
        assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["build_ratio"] == 1.5, "other keys are kept"
    assert results["prefix_reuse_stable"] >= 0.95
    assert results["prefix_reuse_stable"] > results["prefix_reuse_freshness"]
    detail = results["prefix_reuse"]
    for runs in (detail["synthetic_200_turns"], detail["demo_transcript"]):
        assert runs["stable"]["turns"] == runs["freshness"]["turns"] > 0
        assert runs["stable"]["mean_share"] > runs["freshness"]["mean_share"]
        assert runs["stable"]["relative_cost"] < runs["freshness"]["relative_cost"] < 1.25
    markdown = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert markdown.startswith("# Results\n\nother figures")
    assert markdown.count("## Prompt-cache prefix reuse") == 1
