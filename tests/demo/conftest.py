"""One full replay on a temporary SQLite file, shared by the tests of a module."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stm_core.cli.demo.results import DemoResult
from stm_core.cli.demo.runner import run_demo
from stm_core.cli.demo.transcript import Transcript, load_transcript


@pytest.fixture(scope="module")
def transcript() -> Transcript:
    return load_transcript()


@pytest.fixture(scope="module")
def demo_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo-tmp")


@pytest.fixture(scope="module")
def replayed(demo_temp_dir: Path) -> Iterator[DemoResult]:
    """The bundled transcript replayed the default way (no URL: a temporary
    SQLite file), with temporary files directed to a directory we can inspect."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(demo_temp_dir))
        result = asyncio.run(run_demo())
    yield result
