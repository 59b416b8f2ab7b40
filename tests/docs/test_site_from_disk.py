"""The built site works opened from disk, as the README says to open it
(``build/site/index.html``), in a real headless browser: a navigation link
leads to its page (not a directory listing), and the search box finds pages.

Needs Chromium and its driver (Debian packages chromium and chromium-driver);
without them the test skips, or fails under ``STM_REQUIRE_POSTGRES=1`` (CI,
where .ci/run installs them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .browser import Session, find_browser, headless_browser
from .test_code_blocks_run import ROOT

REQUIRE_ENV = "STM_REQUIRE_POSTGRES"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as `make docs` builds it, somewhere of its own."""
    target = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--site-dir", str(target)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return target


@pytest.fixture(scope="module")
def browser() -> Iterator[Session]:
    found = find_browser()
    if found is None:
        message = "the site test needs Chromium and chromedriver (Debian: chromium chromium-driver)"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {message}", pytrace=False)
        pytest.skip(message)
    with headless_browser(*found) as session:
        yield session


def test_a_navigation_link_opens_its_page_from_disk(site: Path, browser: Session) -> None:
    browser.open((site / "index.html").as_uri())
    link = browser.find('nav.md-nav--primary a.md-nav__link[href*="host-in-5-minutes"]')
    browser.click(link)
    assert browser.url == (site / "tutorials" / "host-in-5-minutes.html").as_uri()
    assert browser.text(browser.find("article h1")) == "Host in 5 minutes"
    # And on from a page one folder down, back up to the reference.
    browser.click(browser.find('nav.md-nav--primary a.md-nav__link[href$="cli.html"]'))
    assert browser.url == (site / "cli.html").as_uri()
    assert browser.text(browser.find("article h1")) == "The stm command"


def test_the_search_box_finds_pages_from_disk(site: Path, browser: Session) -> None:
    browser.open((site / "index.html").as_uri())
    # Material shows the search box once its index has loaded (from a script
    # file: a browser fetches nothing from file://).
    (box,) = browser.wait_for(".md-search:not([hidden]) input.md-search__input")
    browser.click(box)
    browser.type(box, "janitor")
    results = browser.wait_for(".md-search-result__item a.md-search-result__link")
    assert results, "the search box found nothing"
    targets = {(browser.attribute(r, "href") or "").split("#")[0] for r in results}
    assert (site / "cli.html").as_uri() in targets
    browser.click(results[0])
    assert browser.url.startswith(site.as_uri()) and ".html" in browser.url
    assert browser.find_all("article h1")


def test_no_page_loads_anything_from_the_network(site: Path) -> None:
    """Viewing the site fetches nothing: no remote script, style or font (the
    theme's offline support would load its worker shim from a CDN)."""
    remote = re.compile(r'<(?:script|link)\b[^>]*\b(?:src|href)="(?:https?:)?//[^"]*"')
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not remote.findall(text), (page.relative_to(site), remote.findall(text))
