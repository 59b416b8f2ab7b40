"""The distribution's metadata builds without setuptools' deprecation
warnings: the license is an SPDX expression (PEP 639), which needs
setuptools 77 or newer at build time, and no license classifier beside it."""

from __future__ import annotations

import re
import tomllib

from .test_code_blocks_run import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_license_is_an_spdx_expression() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]


def test_the_build_backend_reads_spdx_licenses() -> None:
    (setuptools,) = [r for r in PYPROJECT["build-system"]["requires"]
                     if r.startswith("setuptools")]
    found = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", setuptools)
    assert found is not None and int(found[1]) >= 77
