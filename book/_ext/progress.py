"""`make book` says which page's code is running, for how long, and how long that page took
the last time it ran.

myst-nb runs a page's notebook when its code is not in the cache (_build/.jupyter_cache),
and prints "Executing notebook" before and "Executed notebook in N seconds" after; between
the two a page can run for minutes (chapter 7 compiles Numba kernels) with nothing on the
screen. From the moment a page is read until it is parsed, this extension prints a line
every EVERY seconds, once the page has run for EVERY seconds (a page read from the cache
never gets one): the page, the time so far, and the time the cache recorded the last time
the page ran, whatever its code was then.
"""
import threading
import time

from sphinx.util import logging

logger = logging.getLogger(__name__)
EVERY = 30  # seconds between two progress lines


class Heartbeat:
    """Prints docname's progress every EVERY seconds until stop()."""

    def __init__(self, docname: str, last: float | None):
        self.docname, self.last, self.start = docname, last, time.monotonic()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"progress {docname}", daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped.wait(EVERY):
            logger.info(self.line(time.monotonic() - self.start))

    def line(self, elapsed: float) -> str:
        last = "" if self.last is None else f" (it took {self.last:.0f} s the last time it ran)"
        return f"{self.docname}: its code has run for {elapsed:.0f} s{last}"

    def stop(self):
        self.stopped.set()
        self.thread.join()


def last_runtime(app, docname: str) -> float | None:
    """The seconds the page's notebook took when it last ran, from myst-nb's cache."""
    from jupyter_cache import get_cache

    path = str(app.env.doc2path(docname))
    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    records = sorted((r for r in cache.list_cache_records() if r.uri == path), key=lambda r: r.created)
    runs = [r.data["execution_seconds"] for r in records if "execution_seconds" in r.data]
    return runs[-1] if runs else None


def start(app, docname, source):
    if app.env.mystnb_config.execution_mode != "cache" or "kernelspec:" not in source[0]:
        return
    app.env.progress_heartbeats = getattr(app.env, "progress_heartbeats", {})
    app.env.progress_heartbeats[docname] = Heartbeat(docname, last_runtime(app, docname))


def stop(app, doctree):
    heartbeat = getattr(app.env, "progress_heartbeats", {}).pop(app.env.docname, None)
    if heartbeat is not None:
        heartbeat.stop()


def setup(app):
    app.connect("source-read", start)
    app.connect("doctree-read", stop)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
