"""MkDocs hooks of the docs site (``mkdocs.yml``).

The Markdown files are read in two places: on the repository host, where a
link is a path from the file that holds it (``../CHANGELOG.md``,
``docs/privacy.md`` in the changelog), and on the site, where every page lives
under ``docs/``. These hooks let one link serve both: files from outside
``docs/`` that the pages link to are published as pages of their own
(``MIRRORED``), and a link whose target, resolved from its file's place in the
repository, is a page of the site is rewritten to that page. A link to
anything else is left as written, so the strict build still reports it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Site page -> the repository file it publishes.
MIRRORED = {"changelog.md": "CHANGELOG.md"}
#: An inline link or image target: ``](target)`` or ``](target "title")``.
LINK = re.compile(r"\]\((?P<target>[^)\s#]*)(?P<rest>(?:#[^)\s]*)?(?:\s+\"[^\"]*\")?)\)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def on_files(files: Files, config: Any) -> Files:
    for uri, source in MIRRORED.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / source)))
    return files


def repository_path(src_uri: str) -> Path:
    """Where the page's Markdown lives in the repository."""
    return ROOT / MIRRORED[src_uri] if src_uri in MIRRORED else DOCS / src_uri


def site_uri(target: Path) -> str | None:
    """The site page (or file) a repository path is published as, if any."""
    for uri, source in MIRRORED.items():
        if target == ROOT / source:
            return uri
    if target.is_relative_to(DOCS):
        return target.relative_to(DOCS).as_posix()
    return None


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    src_uri: str = page.file.src_uri
    here = repository_path(src_uri).parent

    def rewrite(match: re.Match[str]) -> str:
        target = match["target"]
        if not target or SCHEME.match(target) or target.startswith("/"):
            return match[0]
        uri = site_uri(Path(posixpath.normpath((here / target).as_posix())))
        if uri is None:
            return match[0]
        relative = posixpath.relpath(uri, posixpath.dirname(src_uri) or ".")
        return f"]({relative}{match['rest']})"

    return LINK.sub(rewrite, markdown)
