"""The built site, checked in a real browser (Debian's Chromium driven by Playwright).

`make test` builds the book first (`make book`), so these tests see the site a
reader gets (SITE_DIR=path/to/html points them at another build). Every page is
served from 127.0.0.1 and must load with no console error and no request to any
other host, with math typeset and images loaded; the navigation must open on a
phone (390 px) and collapse on a desktop (1366 px).
"""
import functools
import http.server
import os
import re
import shutil
import sys
import threading
import tomllib
from pathlib import Path
from urllib.parse import urljoin, urlparse

import nbformat
import pytest
import yaml

from .test_notebooks import MYST, prose  # what a notebook's Markdown must not contain

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("SITE_DIR") or ROOT / "_build" / "html").resolve()
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ALL_PAGES = sorted(
    str(p.relative_to(SITE)) for p in SITE.rglob("*.html")
    if not p.relative_to(SITE).parts[0].startswith("_")
) if SITE.is_dir() else []


def redirect_target(path):
    """Where a redirect stub (a page that is only a meta refresh, like the site's index.html)
    sends the reader, or None."""
    found = re.search(r'<meta http-equiv="refresh" content="0; url=([^"]+)"', (SITE / path).read_text(), re.I)
    return found and found.group(1)


# A redirect stub has no content of its own, and a test that looks at it races the
# browser's jump to the target: its checks run on the page it leads to.
REDIRECTS = {path: target for path in ALL_PAGES if (target := redirect_target(path))}
PAGES = [path for path in ALL_PAGES if path not in REDIRECTS]


def test_site_was_built():
    assert (SITE / "index.html").is_file(), f"no site at {SITE}: run `make book` (make test does)"
    assert len(PAGES) > 1


def toc_files(entry):
    """Every file the table of contents (_toc.yml) names, at any depth."""
    if isinstance(entry, list):
        return [file for item in entry for file in toc_files(item)]
    return [entry[key] for key in ("root", "file") if key in entry] + [
        file for key in ("parts", "chapters", "sections") for file in toc_files(entry.get(key, []))]


def test_every_page_of_the_table_of_contents_is_tested():
    """The tests below run on every page of the build: a page of _toc.yml that the build
    did not write (a stale SITE_DIR) would go untested."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    missing = [f for f in toc_files(toc) if f + ".html" not in PAGES]
    assert missing == [], f"pages of _toc.yml missing from the site at {SITE}: {missing} (rebuild it)"


@pytest.mark.parametrize("path", sorted(REDIRECTS))
def test_a_redirect_stub_leads_to_a_page_of_the_site(page, base_url, path):
    target = urljoin(base_url + path, REDIRECTS[path])
    assert urlparse(target).path.lstrip("/") in PAGES, f"{path} redirects to {target}, not a page of the site"
    page.goto(base_url + path)
    page.wait_for_url(target)
    load(page, target)
    assert page.url == target and page.locator("main h1").count() and not page.console_errors


@pytest.fixture(scope="module")
def base_url():
    handler = functools.partial(QuietHandler, directory=str(SITE))
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A browser that navigates away cancels its requests: the connection closes mid-file
        (BrokenPipeError, ConnectionResetError). Any other error is printed as usual."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


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


# One worker opens every page once per window size (the `opened` fixture) and runs
# every test that looks at it.
pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.book, pytest.mark.xdist_group("site")]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}


def recording_page(context):
    """A new page of context that records console errors and blocks requests to other hosts."""
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

    page.route("**/*", route)
    return page


@pytest.fixture
def page(browser, request):
    """A fresh page, for a test that clicks or searches: a desktop window unless the test
    parametrizes `page` indirectly with another size (PHONE)."""
    context = browser.new_context(viewport=getattr(request, "param", None) or DESKTOP)
    yield recording_page(context)
    context.close()


@pytest.fixture(scope="module")
def opened(browser, base_url):
    """opened(path, size=DESKTOP): the page as a reader sees it once it has loaded, its images
    in and its math typeset, opened once per size for every test that only looks at it (a
    test that clicks or scrolls takes a fresh `page` instead)."""
    contexts, pages = {}, {}

    def open_page(path, size=DESKTOP):
        key = (path, size["width"])
        if key not in pages:
            if size["width"] not in contexts:
                contexts[size["width"]] = browser.new_context(viewport=size)
            pages[key] = recording_page(contexts[size["width"]])
            load(pages[key], base_url + path)
            wait_math(pages[key])
        return pages[key]

    yield open_page
    for context in contexts.values():
        context.close()


def load(page, url):
    """Open url and wait until its images are in (generous timeouts: CI machines are busy)."""
    page.set_default_timeout(120_000)
    page.goto(url, wait_until="load")
    page.wait_for_function("[...document.images].every(i => i.complete)")


def wait_math(page):
    """Wait until MathJax has typeset the page (pages without math return at once)."""
    if page.locator(".math").count():
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("MathJax.startup.promise")


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_offline_with_math_and_images(opened, path):
    page = opened(path)
    if page.locator(".math").count():
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


# A word some of whose results are quoted from text with formulas in it: without
# book/_static/search_math.js those quotes would show TeX.
SEARCH_WITH_FORMULAS = "simplex"


def test_search_results_quote_formulas_as_text(page, base_url):
    load(page, base_url + f"search.html?q={SEARCH_WITH_FORMULAS}")
    page.wait_for_function("document.querySelector('#search-results > p')?.textContent.includes('found')")
    page.wait_for_function("""() => { const items = document.querySelectorAll('ul.search li');
        return items.length && [...items].every(i => i.querySelector('p.context')); }""")
    quotes = page.locator("ul.search li p.context").all_inner_texts()
    assert any(re.search(r"[\u0370-\u03ff\u2200-\u22ff\u211d]", q) for q in quotes), (
        f"no quote for {SEARCH_WITH_FORMULAS!r} has a formula in it: pick another word", quotes[:3])
    raw = [q for q in quotes if re.search(r"\\[()\[\]]|\\[a-zA-Z]+|\$", q)]
    assert raw == [], f"search results quote raw TeX: {raw[:3]}"
    assert page.console_errors == []


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
def test_launch_buttons_open_the_paired_notebook(path):
    html = (SITE / path).read_text()
    notebook = path.removesuffix(".html") + ".ipynb"
    for service in ("mybinder.org/v2/gh/", "colab.research.google.com/github/"):
        links = [l for l in html.split('href="')[1:] if l.startswith(f"https://{service}")]
        assert links, f"no {service} launch link on {path}"
        assert all(l.split('"')[0].endswith("/" + notebook) for l in links), links
        assert (ROOT / notebook).is_file()


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
def test_download_button_gives_the_notebook_the_launch_buttons_open(opened, path):
    """The download menu's ".ipynb" is the paired notebook (book/_ext/download_notebooks.py):
    the install cell first and plain Markdown, not the build's executed MyST copy."""
    page = opened(path)
    link = page.locator("a.btn-download-notebook-button")
    assert link.count() == 1, f"no .ipynb in the download menu of {path}"
    download = page.request.get(link.evaluate("a => a.href"))
    assert download.ok, download.status
    notebook = nbformat.reads(download.text(), as_version=4)
    first = notebook.cells[0]
    assert first.cell_type == "code" and "launch-install" in first.metadata.get("tags", []), (
        f"{path}: the downloaded notebook does not start with the install cell")
    myst = [f"cell {i}: {name}" for i, cell in enumerate(notebook.cells) if cell.cell_type == "markdown"
            for name, pattern in MYST.items() if pattern.search(prose(cell.source))]
    assert myst == [], f"{path}: the downloaded notebook has MyST a reader would see raw: {myst[:5]}"
    paired = nbformat.read(ROOT / (path.removesuffix(".html") + ".ipynb"), as_version=4)
    assert [c.source for c in notebook.cells] == [c.source for c in paired.cells], (
        f"{path}: the download is not the notebook the launch buttons open")


# True when some element matching the selector is on screen and is what a tap at its
# centre would hit (not off-canvas, not hidden, not under a backdrop).
REACHABLE = """selector => [...document.querySelectorAll(selector)].some(e => {
    const r = e.getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (r.width < 1 || r.height < 1 || x < 0 || y < 0 || x > innerWidth || y > innerHeight) return false;
    const hit = document.elementFromPoint(x, y);
    return hit !== null && (hit === e || e.contains(hit));
})"""
SITE_NAV = "nav.bd-docs-nav a"   # the book's chapters (primary sidebar)
PAGE_NAV = "nav.page-toc a"      # this page's sections (secondary sidebar)
CHAPTER = "book/01-rows-are-queries.html"


def becomes(page, selector, reachable, what):
    """Wait (briefly: the theme animates) until the selector is, or is not, reachable."""
    from playwright.sync_api import TimeoutError

    try:
        page.wait_for_function(f"({REACHABLE})({selector!r}) === {str(reachable).lower()}",
                               timeout=5_000)
    except TimeoutError:
        pytest.fail(what)


def tap_visible(page, selector):
    buttons = page.locator(f"{selector}:visible")
    assert buttons.count() == 1, f"expected one visible {selector} button, found {buttons.count()}"
    buttons.click()


@pytest.mark.parametrize("page", [PHONE], indirect=True, ids=["390px"])
@pytest.mark.parametrize("button, nav",
                         [(".primary-toggle", SITE_NAV), (".secondary-toggle", PAGE_NAV)],
                         ids=["menu", "page-contents"])
def test_phone_buttons_open_the_navigation(page, base_url, button, nav):
    load(page, base_url + CHAPTER)
    becomes(page, nav, False, f"{nav} is on screen at 390 px before any tap")
    tap_visible(page, button)
    becomes(page, nav, True, f"tapping {button} at 390 px did not bring {nav} on screen")
    assert page.console_errors == [], page.console_errors


@pytest.mark.parametrize("page", [DESKTOP], indirect=True, ids=["1366px"])
def test_desktop_sidebar_toggle_hides_and_shows_the_navigation(page, base_url):
    load(page, base_url + CHAPTER)
    becomes(page, SITE_NAV, True, "the chapter list is not on screen at 1366 px")
    tap_visible(page, ".primary-toggle")
    becomes(page, SITE_NAV, False, "clicking the sidebar toggle at 1366 px did not hide the chapters")
    tap_visible(page, ".primary-toggle")
    becomes(page, SITE_NAV, True, "clicking the sidebar toggle again did not bring the chapters back")
    assert page.console_errors == [], page.console_errors


# A Markdown table that was not rendered shows its delimiter row, "|---|---|", as text
# (the typographer may have turned the dashes into en or em dashes).
RAW_TABLE_TEXT = r"""() => {
    const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
    const raw = [];
    for (let node; (node = walker.nextNode()); ) {
        const element = node.parentElement;
        if (element.closest("pre, code, script, style, mjx-container, .math")) continue;
        if (!element.checkVisibility()) continue;
        const text = node.textContent;
        if (/\|\s*:?[-\u2013\u2014]+:?\s*\|/.test(text)) raw.push(text.trim().slice(0, 120));
    }
    return raw;
}"""


@pytest.mark.parametrize("path", PAGES)
def test_no_raw_markdown_table_text(opened, path):
    page = opened(path)
    raw = page.evaluate(RAW_TABLE_TEXT)
    assert raw == [], f"{path} shows Markdown table source instead of a table: {raw}"


PAGES_WITH_DISPLAY_MATH = [p for p in PAGES if '<div class="math' in (SITE / p).read_text()]


@pytest.mark.parametrize("path", PAGES_WITH_DISPLAY_MATH)
def test_display_equations_fit_the_text_column(opened, path):
    page = opened(path)
    too_wide = page.evaluate("""() => [...document.querySelectorAll('mjx-container[display="true"]')]
        .map(c => [c, c.querySelector("mjx-math"), c.parentElement.getBoundingClientRect()])
        .filter(([c, math, column]) => {
            const r = math.getBoundingClientRect();
            return r.left < column.left - 1 || r.right > column.right + 1;
        })
        .map(([c, math, column]) => `${Math.round(math.getBoundingClientRect().width)} px in a `
             + `${Math.round(column.width)} px column: `
             + (c.querySelector("mjx-assistive-mml")?.textContent || "").slice(0, 60))""")
    assert too_wide == [], f"display equations wider than the text on {path} at 1366 px: {too_wide}"


@pytest.mark.parametrize("path", PAGES)
def test_wide_figures_stay_readable_on_a_phone(opened, path):
    """A figure much wider than tall (panels side by side) shrinks to a strip on a phone."""
    page = opened(path, PHONE)
    strips = page.evaluate("""() => [...document.querySelectorAll("main img")]
        .filter(i => i.naturalWidth >= 2.5 * i.naturalHeight && i.getBoundingClientRect().height < 150)
        .map(i => [i, i.getBoundingClientRect()])
        .map(([i, r]) => `${i.src.split("/").pop()}: ${i.naturalWidth}x${i.naturalHeight}`
                         + ` shown ${Math.round(r.width)}x${Math.round(r.height)}`)""")
    assert strips == [], f"figures on {path} shrink below 150 px high at 390 px: {strips}"


def test_a_favicon_is_served(page, base_url):
    load(page, base_url + CHAPTER)
    href = page.evaluate("document.querySelector('link[rel~=icon]')?.href")
    assert href, "no <link rel=icon>: browsers ask for /favicon.ico, get a 404 and log an error"
    icon = page.request.get(href)
    assert icon.ok and icon.headers["content-type"].startswith("image/"), (href, icon.status)
    assert len(icon.body()) > 100


def test_the_front_door_works_from_a_file(browser):
    """_build/html/index.html opened as a file: its refresh leads to the first page, and where
    no refresh happens (a tool that opens the file and stops there) it shows a link there."""
    target = redirect_target("index.html")
    assert target and (SITE / target).is_file()
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto((SITE / "index.html").as_uri())
    page.wait_for_url("**/" + target)
    front = re.sub(r'<meta http-equiv="refresh"[^>]*>', "", (SITE / "index.html").read_text(), flags=re.I)
    page.set_content(front)
    link = page.locator(f'a[href="{target}"]')
    assert link.is_visible() and "open the course" in link.inner_text(), front
    context.close()


def test_repository_url_comes_from_pyproject(page, base_url):
    """pyproject's Repository URL is the one source: the site's links and clone command use it."""
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    assert yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"] == url
    load(page, base_url + "book/learners.html")
    assert page.locator(f'a[href="{url}"]').count() >= 1, "the repository button links elsewhere"
    assert f"git clone {url}" in page.locator("main").inner_text()


# ---------------------------------------------------------------------------------------
# A phone (390 px): nothing scrolls the page sideways, a wide equation scrolls in its own
# box, every figure is there and described (book/_static/narrow.css).
# ---------------------------------------------------------------------------------------

# Elements that stick out to the right of the window, outside any box that scrolls or clips
# them itself: what makes the page scroll sideways.
STICKING_OUT = """() => {
    const width = document.documentElement.clientWidth;
    const contained = e => {
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
            const o = getComputedStyle(a).overflowX;
            if (o !== "visible" && a.getBoundingClientRect().right <= width + 1) return true;
        }
        return false;
    };
    return [...document.querySelectorAll("body *")]
        .filter(e => e.getBoundingClientRect().right > width + 1 && e.checkVisibility())
        .filter(e => !contained(e))
        .filter(e => ![...e.children].some(c => c.getBoundingClientRect().right > width + 1))
        .map(e => `<${e.tagName.toLowerCase()} class="${e.className}"> ends at `
                  + `${Math.round(e.getBoundingClientRect().right)} px: ${(e.textContent || "").trim().slice(0, 60)}`)
        .slice(0, 5);
}"""


@pytest.mark.parametrize("path", PAGES)
def test_no_page_scrolls_sideways_on_a_phone(opened, path):
    page = opened(path, PHONE)
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], (
        f"{path} is {widths[0]} px wide in a {widths[1]} px window: {page.evaluate(STICKING_OUT)}")


# A display equation wider than its box must scroll inside it (overflow-x auto or scroll),
# show a cue that there is more (narrow.js marks the box, narrow.css fades the edge that
# hides part of it), and the box itself must lie inside the text column, so no part of the
# equation is out of reach.
CLIPPED_EQUATIONS = """() => {
    const column = document.querySelector("article.bd-article") || document.querySelector("main");
    const c = column.getBoundingClientRect();
    return [...document.querySelectorAll('mjx-container[display="true"]')].flatMap(box => {
        const math = box.querySelector("mjx-math"), r = box.getBoundingClientRect();
        const label = (box.querySelector("mjx-assistive-mml")?.textContent || "").slice(0, 50);
        if (!box.checkVisibility()) return [];
        const style = getComputedStyle(box);
        const wide = math.getBoundingClientRect().width > box.clientWidth + 1;
        const problems = [];
        if (r.left < c.left - 1 || r.right > c.right + 1)
            problems.push(`box ${Math.round(r.left)}-${Math.round(r.right)} px outside the column`);
        if (wide && !["auto", "scroll"].includes(style.overflowX))
            problems.push(`${Math.round(math.getBoundingClientRect().width)} px equation cut to ${box.clientWidth} px`);
        const mask = style.maskImage || style.webkitMaskImage || "";
        if (wide && !(box.classList.contains("eq-more-right") && mask.includes("gradient")))
            problems.push("scrolls with no cue at its hidden edge");
        return problems.length ? [`${problems.join(", ")}: ${label}`] : [];
    });
}"""


@pytest.mark.parametrize("path", PAGES_WITH_DISPLAY_MATH)
def test_wide_equations_scroll_in_their_own_box_on_a_phone(opened, path):
    page = opened(path, PHONE)
    page.wait_for_function("document.documentElement.dataset.equationsMarked === '1'")
    clipped = page.evaluate(CLIPPED_EQUATIONS)
    assert clipped == [], f"display equations cut off on {path} at 390 px: {clipped[:5]}"


@pytest.mark.parametrize("path", PAGES)
def test_figures_are_present_and_described_on_a_phone(opened, path):
    """Every image of the text loaded, fits the column, and has alt text that describes it
    (Sphinx's fallback alt is the file's path, which says nothing)."""
    page = opened(path, PHONE)
    problems = page.evaluate("""() => {
        const width = document.documentElement.clientWidth;
        return [...document.querySelectorAll("article.bd-article img")].flatMap(i => {
            const alt = (i.getAttribute("alt") || "").trim(), name = i.src.split("/").pop();
            const p = [];
            if (!(i.complete && i.naturalWidth > 0)) p.push("not loaded");
            if (alt.length < 15 || /\\.(png|svg|jpe?g|gif)$/i.test(alt)) p.push(`alt text ${JSON.stringify(alt)}`);
            if (i.getBoundingClientRect().right > width + 1) p.push("wider than the window");
            return p.length ? [`${name}: ${p.join(", ")}`] : [];
        });
    }""")
    assert problems == [], f"figures on {path} at 390 px: {problems}"


def test_favicon_ico_at_the_site_root(page, base_url):
    """Browsers ask for /favicon.ico on a page that names no icon (the redirect stub)."""
    icon = page.request.get(base_url + "favicon.ico")
    assert icon.ok and len(icon.body()) > 100, icon.status
    assert icon.body()[:4] == b"\x00\x00\x01\x00", "not an ICO file"


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1366px", "390px"])
@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
def test_printed_output_needs_no_sideways_scroll(opened, path, size):
    """Printed output wraps (narrow.css): a reader never scrolls an output box sideways."""
    page = opened(path, size)
    wide = page.evaluate("""() => [...document.querySelectorAll("div.cell_output pre")]
        .filter(p => p.checkVisibility() && p.scrollWidth > p.clientWidth + 1)
        .map(p => `${p.scrollWidth} px in ${p.clientWidth} px: ${p.textContent.slice(0, 60)}`)""")
    assert wide == [], f"output that scrolls sideways on {path}: {wide[:3]}"


# ---------------------------------------------------------------------------------------
# Figure text on a phone. A PNG w pixels wide at d dpi is w / d inches of figure; shown
# r CSS px wide, its text of s points is s / 72 * r / (w / d) CSS px, whatever the dpi.
# attncore.legibility draws every figure of the book and writes its smallest text, in
# points, into the PNG (and the dpi, as every matplotlib PNG): this reads both back and
# measures r in the browser.
# ---------------------------------------------------------------------------------------
MIN_FIGURE_TEXT_PX = 9

# Each image of the text with the width it is shown at; one hidden in a closed toggle
# would be shown as wide as its width attribute allows in the column.
SHOWN_IMAGES = """() => {
    const column = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
    return [...column.querySelectorAll("img")].map(i => {
        const shown = i.getBoundingClientRect().width;
        const natural = Number(i.getAttribute("width")) || i.naturalWidth;
        return [new URL(i.src).pathname, shown > 0 ? shown : Math.min(natural, column.clientWidth)];
    });
}"""


def figure_text_sizes(page):
    """[(image name, smallest text in CSS px or None, why None)] for the images of the open page."""
    from urllib.parse import unquote

    from PIL import Image

    from attncore.legibility import SMALLEST_TEXT_KEY

    sizes = []
    for src, shown in page.evaluate(SHOWN_IMAGES):
        file = SITE / unquote(src).lstrip("/")
        if file.suffix.lower() != ".png":
            sizes.append((file.name, None, "not a PNG: its text size cannot be read"))
            continue
        with Image.open(file) as image:
            points, dpi = image.info.get(SMALLEST_TEXT_KEY), image.info.get("dpi", (0,))[0]
            inches = image.width / dpi if dpi else 0
        if points is None or not inches:
            sizes.append((file.name, None, f"records no smallest text ({SMALLEST_TEXT_KEY}) or dpi: "
                                           "not drawn through attncore.legibility (or executed before "
                                           "it was: clear _build/.jupyter_cache)"))
            continue
        sizes.append((file.name, float(points) / 72 * shown / inches, f"{points} pt, {inches:.2f} in "
                                                                       f"shown {shown:.0f} px"))
    return sizes


@pytest.mark.parametrize("path", PAGES)
def test_figure_text_is_legible_on_a_phone(opened, path):
    """Every figure's smallest text is at least 9 CSS px at 390 px (issue 24)."""
    page = opened(path, PHONE)
    small = [f"{name}: {'unknown' if px is None else f'{px:.2f} px'} ({why})"
             for name, px, why in figure_text_sizes(page) if px is None or px < MIN_FIGURE_TEXT_PX]
    assert small == [], f"figure text under {MIN_FIGURE_TEXT_PX} CSS px on {path} at 390 px: {small}"
