"""A plugin distribution written against stm 0.1.0, installed from its wheel,
passes its own tests against the stm under test (docs/hook-policy.md).

``dist_0_1`` (``stm-vintage``) uses only what 0.1.0 documented: the hook
reference, the plugin guide, the host guide and the test kit of that release.
It is never updated: when one of its tests fails, stm broke a promise, and stm
is what gets fixed. Its wheel is built with pip and installed into a target
folder of its own (no dependencies: the stm under test is the one in this
environment), which the tests run with on their path, so its entry points are
found as an installed distribution's are.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DIST = Path(__file__).with_name("dist_0_1")
#: The distribution's checks (its own test cases and the storage conformance
#: suite it subclasses); fewer means some were lost or skipped.
EXPECTED_CHECKS = 75
#: Variables that would change what the distribution's tests see.
HOST_ENV = ("STM_LOAD_PLUGINS", "STM_DISABLED_PLUGINS", "STM_STRICT_PLUGINS",
            "STM_TRACE_PLUGINS", "STM_DEFAULT_RENDER_MODE", "STM_STRICT_PROVIDERS",
            "PYTHONPATH")


def _run(cmd: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The distribution's wheel, built and installed into a folder; the folder."""
    work = tmp_path_factory.mktemp("dist-0-1")
    source = work / "src"
    shutil.copytree(DIST, source, ignore=shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info", ".pytest_cache"))
    wheels, target = work / "wheels", work / "site"
    built = _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                  "--wheel-dir", wheels, source], cwd=work)
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("stm_vintage-0.1.0-*.whl")
    done = _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                 "--no-index", "--target", target, wheel], cwd=work)
    assert done.returncode == 0, done.stderr
    assert (target / "stm_vintage" / "gates.py").is_file()
    [dist_info] = target.glob("stm_vintage-0.1.0.dist-info")
    assert "vintage_gates = stm_vintage.gates" in (dist_info / "entry_points.txt").read_text()
    return target


def test_the_0_1_distribution_passes_its_own_tests(installed: Path, tmp_path: Path) -> None:
    # Its tests, without its sources: stm_vintage can only come from the wheel.
    tests = tmp_path / "stm-vintage"
    shutil.copytree(DIST / "tests", tests / "tests",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(DIST / "pyproject.toml", tests / "pyproject.toml")
    env = {k: v for k, v in os.environ.items() if k not in HOST_ENV}
    env["PYTHONPATH"] = str(installed)
    # Deprecation warnings are allowed: the hook policy warns before it removes.
    result = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                  cwd=tests, env=env)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    passed = re.search(r"(\d+) passed", result.stdout)
    assert passed is not None and int(passed.group(1)) >= EXPECTED_CHECKS, report
    assert " failed" not in result.stdout and "skipped" not in result.stdout, report
    imported = _run([sys.executable, "-c", "import stm_vintage; print(stm_vintage.__file__)"],
                    cwd=tests, env=env)
    assert Path(imported.stdout.strip()).is_relative_to(installed)
