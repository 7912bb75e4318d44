"""`make book`'s progress lines (book/_ext/progress.py): while a page's code runs, a line every
EVERY seconds names the page, the time so far and how long the page took when it last ran;
a page that is read quickly (from the cache) gets none."""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import progress  # noqa: E402 (book/_ext is not a package)


def test_the_line_names_the_page_the_time_so_far_and_the_last_run():
    beat = progress.Heartbeat("book/07-performance", 137.2)
    beat.stop()
    assert beat.line(31.4) == "book/07-performance: its code has run for 31 s (it took 137 s the last time it ran)"
    assert progress.Heartbeat("book/intro", None).line(60) == "book/intro: its code has run for 60 s"


def test_lines_come_while_the_page_runs_and_stop_with_it(monkeypatch, caplog):
    monkeypatch.setattr(progress, "EVERY", 0.01)
    caplog.set_level("INFO")
    beat = progress.Heartbeat("book/07-performance", None)
    for _ in range(500):           # until two lines came, or 5 s
        if len([r for r in caplog.records if "07-performance" in r.getMessage()]) >= 2:
            break
        time.sleep(0.01)
    beat.stop()
    assert not beat.thread.is_alive()
    count = len(caplog.records)
    assert count >= 2
    assert all(r.getMessage().startswith("book/07-performance: its code has run for") for r in caplog.records)
    time.sleep(0.05)
    assert len(caplog.records) == count   # stopped: no more lines


def test_a_quick_page_gets_no_line(caplog):
    caplog.set_level("INFO")
    progress.Heartbeat("book/intro", 3.0).stop()
    assert caplog.records == []
