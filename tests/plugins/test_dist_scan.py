"""The quick scan of ``sys.path`` that spares a command importlib.metadata:
it must agree with importlib.metadata, and say "not sure" where it cannot."""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stm_core.plugins import dist_scan, stm_version
from stm_core.plugins.loader import discover_entry_points

GROUP = "stm_scan_test_group"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root


def write_dist(root: Path, name: str, version: str, entry_points: str = "",
               suffix: str = ".dist-info") -> Path:
    folder = root / f"{name}-{version}{suffix}"
    folder.mkdir()
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if entry_points:
        (folder / "entry_points.txt").write_text(entry_points)
    return folder


def test_a_group_nobody_declares_is_known_absent(site: Path) -> None:
    write_dist(site, "tool", "1.0", "[console_scripts]\ntool = tool:main\n")
    assert dist_scan.declares_entry_point_group(GROUP) is False


def test_a_group_declared_in_an_egg_info_folder_is_found(site: Path) -> None:
    write_dist(site, "dev_plug", "0.1", f"[{GROUP}]\nplug = plug\n", suffix=".egg-info")
    assert dist_scan.declares_entry_point_group(GROUP) is True


def test_an_egg_info_file_has_no_entry_points_to_read(site: Path) -> None:
    (site / "old_tool-1.0.egg-info").write_text("Metadata-Version: 1.1\nName: old-tool\n")
    assert dist_scan.declares_entry_point_group(GROUP) is False


def test_a_declared_group_is_found_whatever_the_spacing(site: Path) -> None:
    write_dist(site, "plug", "2.0", f"[console_scripts]\nx = y:z\n\n[ {GROUP} ]\nplug = plug\n")
    assert dist_scan.declares_entry_point_group(GROUP) is True


def test_a_group_name_inside_a_value_is_not_a_declaration(site: Path) -> None:
    write_dist(site, "tool", "1.0", f"[console_scripts]\n{GROUP} = mod:main\n")
    assert dist_scan.declares_entry_point_group(GROUP) is False


def test_a_zip_on_the_path_makes_the_scan_unsure(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("plug-1.0.dist-info/entry_points.txt", f"[{GROUP}]\nplug = plug\n")
    monkeypatch.syspath_prepend(str(archive))
    assert dist_scan.declares_entry_point_group(GROUP) is None
    assert dist_scan.installed_version("stm-core") is None


def test_a_custom_distribution_finder_makes_the_scan_unsure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Finder:
        def find_spec(self, *args: object) -> None:
            return None

        def find_distributions(self, *args: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert dist_scan.declares_entry_point_group(GROUP) is None


def test_stm_version_agrees_with_importlib_metadata() -> None:
    # A source checkout may put its own egg-info first: then the scan is unsure.
    assert dist_scan.installed_version("stm-core") in (None, importlib.metadata.version("stm-core"))
    stm_version.cache_clear()
    assert stm_version() == importlib.metadata.version("stm-core")


def test_the_first_distribution_on_the_path_gives_the_version(site: Path) -> None:
    write_dist(site, "stm_core", "9.9.9")
    assert dist_scan.installed_version("STM.Core") == "9.9.9"
    assert importlib.metadata.version("stm-core") == "9.9.9"


def test_an_egg_info_first_on_the_path_is_left_to_importlib(site: Path) -> None:
    write_dist(site, "stm_core", "9.9.9-py3.11", suffix=".egg-info")
    assert dist_scan.installed_version("stm-core") is None


def test_discovery_reads_real_metadata_once_the_group_is_declared(site: Path) -> None:
    write_dist(site, "stm-scan-plugin", "3.1", f"[{GROUP}]\nscan = scan_mod\n")
    [ref] = discover_entry_points(GROUP)
    assert (ref.origin.name, ref.origin.distribution, ref.origin.version) == (
        "scan", "stm-scan-plugin", "3.1")
    assert ref.entry_point.value == "scan_mod"


def test_discovery_of_an_undeclared_group_finds_nothing(site: Path) -> None:
    write_dist(site, "tool", "1.0", "[console_scripts]\ntool = tool:main\n")
    assert discover_entry_points(GROUP) == []
