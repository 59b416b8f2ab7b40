"""``stm plugins new NAME``: write a complete plugin distribution.

The distribution (``stm-NAME``) has a pyproject with the ``stm`` entry point
and a dependency on ``stm-core``, a module with one commented example per hook
concern the author picks, a test on :mod:`stm_core.testing` and a README.
Everything is written into a temporary sibling directory that is renamed into
place at the end, so an interrupted run leaves no half-written plugin.
"""

from __future__ import annotations

import os
import re
import shutil
import string
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from stm_core.cli.scaffold_templates import (
    CONCERNS,
    CONFTEST,
    DEFAULT_CONCERNS,
    MODULE,
    PYPROJECT,
    README,
    TEST,
    Concern,
)
from stm_core.errors import ValidationError
from stm_core.plugins.registration import stm_version

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
#: Standard-library names the concern examples may use, and where they come from.
_STDLIB_NAMES = {"Callable": "collections.abc", "Iterable": "collections.abc",
                 "Mapping": "collections.abc", "Any": "typing"}


@attrs.frozen(kw_only=True)
class PluginNames:
    """The names a plugin called ``shouty`` goes by."""

    slug: str  # entry-point name: "shouty"
    package: str  # import name: "stm_shouty"
    distribution: str  # on the package index: "stm-shouty"
    title: str  # in prose: "Shouty"

    @classmethod
    def parse(cls, name: object) -> PluginNames:
        """``"shouty"``, ``"stm-shouty"`` or ``"stm_shouty"`` -> the same names."""
        if not isinstance(name, str):
            raise ValidationError(f"a plugin name must be a string, not {type(name).__name__}",
                                  field="name", allowed="a string such as 'shouty'")
        lowered = name.strip().lower()
        slug = re.sub(r"^stm[-_]", "", lowered).replace("-", "_")
        if not _NAME.fullmatch(lowered) or not slug or len(slug) > 60:
            allowed = ("1-60 lowercase letters, digits, '-' or '_', starting with a letter "
                       "(e.g. 'shouty' or 'stm-shouty')")
            raise ValidationError(f"{name!r} is not a usable plugin name: use {allowed}",
                                  field="name", allowed=allowed)
        return cls(slug=slug, package=f"stm_{slug}", distribution=f"stm-{slug.replace('_', '-')}",
                   title=slug.replace("_", " ").title())


def parse_concerns(keys: Iterable[str]) -> tuple[Concern, ...]:
    """The concerns by key, in the hook reference's order; none picked means
    the defaults (a gate, phrasing and a render mode)."""
    wanted = list(keys) or list(DEFAULT_CONCERNS)
    unknown = sorted(set(wanted) - set(CONCERNS))
    if unknown:
        allowed = ", ".join(CONCERNS)
        raise ValidationError(f"unknown hook concern(s): {', '.join(map(repr, unknown))}; "
                              f"choose from {allowed}", field="concern", allowed=allowed)
    return tuple(c for key, c in CONCERNS.items() if key in wanted)


def render_files(names: PluginNames, concerns: Sequence[Concern]) -> dict[str, str]:
    """Relative path -> text of every file of the new distribution."""
    code = "\n".join(c.code for c in concerns)
    values = {"slug": names.slug, "package": names.package, "title": names.title,
              "distribution": names.distribution,
              "stm_version": _minimum_stm_version(),
              "concern_list": "; ".join(c.summary for c in concerns)}
    module_values = {**values, "imports": _import_block(code, concerns)}
    fill = string.Template
    return {
        "pyproject.toml": fill(PYPROJECT).substitute(values),
        "README.md": fill(README).substitute(values),
        f"{names.package}/__init__.py": fill(fill(MODULE).substitute(
            {**module_values, "code": code})).substitute(values),
        "tests/conftest.py": CONFTEST,
        f"tests/test_{names.slug}.py": fill(fill(TEST).substitute(
            {**values, "tests": "".join(c.test for c in concerns)})).substitute(values),
    }


def write_plugin(target: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` under ``target`` (which must not exist, or be an empty
    directory), all or nothing."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise _taken(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        staging.chmod(0o755)  # mkdtemp makes it private; a project directory is not
        try:
            if target.exists():
                target.rmdir()  # empty, checked above
            os.rename(staging, target)
        except OSError as exc:  # another run got there first: its plugin stays whole
            raise _taken(target) from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _taken(target: Path) -> ValidationError:
    return ValidationError(f"{target} already exists and is not an empty directory",
                           field="directory", allowed="a new or empty directory")


def _import_block(code: str, concerns: Sequence[Concern]) -> str:
    by_module: dict[str, list[str]] = {}
    for name, module in _STDLIB_NAMES.items():
        if re.search(rf"\b{name}\b", code):
            by_module.setdefault(module, []).append(name)
    stdlib = [f"from {m} import {', '.join(sorted(n))}" for m, n in sorted(by_module.items())]
    stm_names = sorted({"hookimpl", *(n for c in concerns for n in c.stm_names)})
    one_line = f"from stm_core import {', '.join(stm_names)}"
    if len(one_line) > 99:
        one_line = "from stm_core import (\n" + "".join(f"    {n},\n" for n in stm_names) + ")"
    ours = [one_line,
            *sorted({line for c in concerns for line in c.extra_imports})]
    # One blank line before a constant, two before a function (as isort wants).
    gap = "\n\n" if code.lstrip("\n").startswith(("@", "def ")) else "\n"
    return "\n".join(stdlib) + ("\n\n" if stdlib else "") + "\n".join(ours) + gap


def _minimum_stm_version() -> str:
    """The installed stm's version, so the plugin asks for at least what it was
    written against (0.1 when running from a source tree without metadata)."""
    version = stm_version() or "0.1"
    return ".".join(version.split(".")[:2])
