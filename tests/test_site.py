"""The built site, checked in a real browser (Debian's Chromium driven by Playwright).

`make test` builds the book first (`make book`), so these tests see the site a
reader gets. Every page is served from 127.0.0.1 and must load with no console
error and no request to any other host, with math typeset and images loaded.
"""
import functools
import http.server
import os
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

SITE = Path(__file__).resolve().parents[1] / "_build" / "html"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PAGES = sorted(
    str(p.relative_to(SITE)) for p in SITE.rglob("*.html")
    if not p.relative_to(SITE).parts[0].startswith("_")
) if SITE.is_dir() else []


def test_site_was_built():
    assert (SITE / "index.html").is_file(), f"no site at {SITE}: run `make book` (make test does)"
    assert len(PAGES) > 1


@pytest.fixture(scope="module")
def base_url():
    handler = functools.partial(QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        message = f"Chromium not found at {CHROMIUM}: apt-get install chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A fresh page that records console errors and blocks requests to other hosts."""
    context = browser.new_context()
    page = context.new_page()
    page.console_errors, page.foreign_requests = [], []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))

    def route(route):
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob") or url.hostname == "127.0.0.1":
            return route.continue_()
        page.foreign_requests.append(route.request.url)
        return route.abort()

    context.route("**/*", route)
    yield page
    context.close()


def load(page, url):
    """Open url and wait until its images are in (generous timeouts: CI machines are busy)."""
    page.set_default_timeout(120_000)
    page.goto(url, wait_until="load")
    page.wait_for_function("[...document.images].every(i => i.complete)")


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_offline_with_math_and_images(page, base_url, path):
    load(page, base_url + path)
    if page.locator(".math").count():
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("MathJax.startup.promise")
        raw = page.evaluate(
            "[...document.querySelectorAll('.math')].filter(e => !e.querySelector('mjx-container'))"
            ".map(e => e.textContent.slice(0, 80))"
        )
        assert raw == [], f"math left as raw TeX on {path}: {raw[:3]}"
    broken = page.evaluate(
        "[...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )
    assert broken == [], f"images that did not load on {path}: {broken}"
    assert page.foreign_requests == [], f"{path} asked other hosts: {page.foreign_requests}"
    assert page.console_errors == [], f"console errors on {path}: {page.console_errors}"


def test_math_is_typeset_by_the_bundled_mathjax(page, base_url):
    pages_with_math = [p for p in PAGES if 'class="math' in (SITE / p).read_text()]
    assert pages_with_math, "no page has math"
    load(page, base_url + pages_with_math[0])
    page.evaluate("MathJax.startup.promise")
    assert page.locator("mjx-container").count() > 0
    sources = page.evaluate("[...document.scripts].map(s => s.src).filter(s => /mathjax/i.test(s))")
    assert sources and all(s.startswith(base_url) for s in sources), sources


def test_search_finds_softmax(page, base_url):
    load(page, base_url + "search.html?q=softmax")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for()
    assert results.count() >= 1
    assert page.foreign_requests == [] and page.console_errors == []


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
def test_launch_buttons_open_the_paired_notebook(path):
    html = (SITE / path).read_text()
    notebook = path.removesuffix(".html") + ".ipynb"
    for service in ("mybinder.org/v2/gh/", "colab.research.google.com/github/"):
        links = [l for l in html.split('href="')[1:] if l.startswith(f"https://{service}")]
        assert links, f"no {service} launch link on {path}"
        assert all(l.split('"')[0].endswith("/" + notebook) for l in links), links
        assert (SITE.parents[1] / notebook).is_file()
