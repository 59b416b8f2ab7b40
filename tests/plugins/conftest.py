"""Installed plugins without installing anything: fake distributions whose
entry points point at real modules written to a temporary directory (the way
pluggy tests its own entry-point loading)."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest


@attrs.define
class FakeDistribution:
    """What the loader reads of a distribution: name, version, entry points."""

    name: str
    version: str
    entry_points: list[importlib.metadata.EntryPoint]

    @property
    def metadata(self) -> dict[str, str]:
        return {"Name": self.name}


@attrs.define
class FakeSite:
    """A site-packages stand-in: modules on disk, distributions in metadata."""

    root: Path
    distributions: list[FakeDistribution] = attrs.field(factory=list)
    modules: list[str] = attrs.field(factory=list)

    def module(self, name: str, source: str) -> str:
        """Write an importable module; returns its name."""
        (self.root / f"{name}.py").write_text(textwrap.dedent(source))
        self.modules.append(name)
        return name

    def distribution(self, name: str, version: str = "1.0",
                     entry_points: dict[str, str] | None = None,
                     group: str = "stm") -> FakeDistribution:
        dist = FakeDistribution(name=name, version=version, entry_points=[
            importlib.metadata.EntryPoint(name=ep, value=value, group=group)
            for ep, value in (entry_points or {}).items()])
        self.distributions.append(dist)
        # On disk too: the loader's quick scan of sys.path must see the group.
        folder = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        folder.mkdir(exist_ok=True)
        lines = [f"{ep} = {value}" for ep, value in (entry_points or {}).items()]
        (folder / "entry_points.txt").write_text("\n".join([f"[{group}]", *lines, ""]))
        return dist


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    """Replace the installed distributions with fakes, and clear the loader's
    environment variables so the developer's shell cannot change the outcome."""
    site = FakeSite(root=tmp_path / "site")
    site.root.mkdir()
    monkeypatch.syspath_prepend(str(site.root))
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: list(site.distributions))
    for var in ("STM_LOAD_PLUGINS", "STM_DISABLED_PLUGINS", "STM_STRICT_PLUGINS",
                "STM_TRACE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    yield site
    for name in site.modules:
        sys.modules.pop(name, None)
