"""Installed distributions read straight from ``sys.path``, to start quickly.

Importing :mod:`importlib.metadata` is slow for a quick command (email
parsing, zipfile, csv), and walking its distributions parses every
``METADATA`` file on the path. At start-up stm only needs two answers: does
any distribution declare an entry point of the ``stm`` group, and which
version of stm is installed. Both can be read from the ``*.dist-info`` and
``*.egg-info`` folders of the ``sys.path`` directories, which is where
importlib.metadata's own path finder looks.

Each function answers ``None`` when it cannot be sure (a zip file or a custom
distribution finder on the path, an unreadable folder): the caller then asks
importlib.metadata, which stays the authority.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys

_METADATA_SUFFIXES = (".dist-info", ".egg-info")


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_dirs() -> list[str] | None:
    """Every distribution folder on ``sys.path``, in path order, or ``None``
    when some distributions may live where this scan does not look."""
    for finder in sys.meta_path:
        if (getattr(finder, "find_distributions", None) is not None
                and finder is not importlib.machinery.PathFinder):
            return None
    found: list[str] = []
    for entry in sys.path:
        directory = entry or os.getcwd()
        if not os.path.isdir(directory):
            if os.path.exists(directory):  # a zip file: importlib reads inside it
                return None
            continue
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return None
        found.extend(os.path.join(directory, name) for name in names
                     if name.lower().endswith(_METADATA_SUFFIXES))
    return found


def declares_entry_point_group(group: str) -> bool | None:
    """Whether any distribution on the path has entry points of ``group``
    (``None``: not sure)."""
    folders = _metadata_dirs()
    if folders is None:
        return None
    header = re.compile(rf"^\s*\[\s*{re.escape(group)}\s*\]\s*$", re.MULTILINE)
    for folder in folders:
        path = os.path.join(folder, "entry_points.txt")
        # Most distributions declare no entry points: asking first is much
        # cheaper than an open() that fails.
        if not os.access(path, os.F_OK):  # none, or an egg-info file
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (FileNotFoundError, NotADirectoryError):  # removed meanwhile
            continue
        except (OSError, UnicodeDecodeError):
            return None
        if group in text and header.search(text):
            return True
    return False


def installed_version(distribution: str) -> str | None:
    """The version of the first ``distribution`` on the path, from its
    ``name-version.dist-info`` folder name (``None``: not found that way)."""
    folders = _metadata_dirs()
    if folders is None:
        return None
    wanted = _normalize(distribution)
    for folder in folders:
        stem = os.path.basename(folder)
        # Names start with a letter or digit: most folders are told apart
        # by it, without the regex.
        if stem[:1].lower() != wanted[:1]:
            continue
        name, _, version = re.sub(r"\.(dist|egg)-info$", "", stem, flags=re.I).partition("-")
        if _normalize(name) != wanted:
            continue
        # An egg-info folder's name may carry more than the version: ask importlib.
        return version if stem.endswith(".dist-info") and version else None
    return None
