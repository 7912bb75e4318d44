"""Figures whose text stays legible on a phone (used by attncore.viz, so by every chapter).

A figure W inches wide (as saved) is shown at most PHONE_FIGURE_PX CSS px wide on a 390 px
phone, whatever its dpi, and at its own size, DISPLAY_DPI CSS px per inch, if that is
narrower. Its text of s points is then

    s / 72 * min(PHONE_FIGURE_PX / W, DISPLAY_DPI)   CSS px,

so text of at least MIN_TEXT_PX CSS px needs s >= floor_points(W) points (with 2% to
spare): 13.1 pt in a figure of viz.FIGURE_WIDTH = 6.4 inches (6.6 saved), 9.2 pt in one
under 4.6 inches. The dpi only sets sharpness.

In a Jupyter kernel (the book's build, Colab, Binder) `use_in_notebooks` shows every
matplotlib figure through `notebook_png`: a copy of the figure has any text under the
floor raised to it (its layout makes room), and is drawn at twice the figure's dpi
(sharp on a phone's screen) and shown at 1x: 72 CSS px per inch on a desktop, so a
point of text is a CSS pixel there. The PNG records its smallest text in points
(SMALLEST_TEXT_KEY) beside its dpi, so tests/test_site.py checks the rule on every page
of the built site.
"""
from __future__ import annotations

import base64
import struct
import textwrap
import warnings

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

MIN_TEXT_PX = 9.0       # smallest text a reader should get on a phone, in CSS px
PHONE_FIGURE_PX = 334   # width of a figure at 390 px: the text column less the figure's margins
DISPLAY_DPI = 72        # CSS px per inch of a figure on a desktop: 1 pt of text is 1 CSS px
SMALLEST_TEXT_KEY = "Smallest text (pt)"   # the PNG text chunk the site test reads
STYLE = {"figure.dpi": DISPLAY_DPI}
ROUNDING = 1.02         # the PNG's whole pixels and its dpi (kept per metre) round the size
TOO_WIDE = 8.0          # inches: wider figures are shown as drawn (see legible_copy)


def floor_points(width_inches: float) -> float:
    """Smallest font size, in points, legible on a phone in a figure width_inches wide.

    A figure narrower than the phone's column is shown at its own size, DISPLAY_DPI CSS px
    per inch, and is not enlarged: its text needs MIN_TEXT_PX * 72 / DISPLAY_DPI points.
    """
    return MIN_TEXT_PX * 72 * max(width_inches / PHONE_FIGURE_PX, 1 / DISPLAY_DPI) * ROUNDING


def _texts(fig: Figure) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _lay_out(fig: Figure) -> None:
    """Run the figure's layout. A half-done change may not fit yet (constrained layout then
    warns): what the figure looks like at the end is what counts, and its saving warns."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.draw_without_rendering()


def _wrap(text: Text, room: float, along_height: bool = False) -> None:
    """Break text into lines if it is longer than room (display px); TeX is left alone."""
    words = text.get_text()
    box = text.get_window_extent()
    length = box.height if along_height else box.width
    if length <= room or "$" in words or "\n" in words or room <= 0:
        return
    text.set_text(textwrap.fill(words, max(10, int(len(words) * room / length * 0.95)),
                                break_on_hyphens=False))


def _upright_if_crowded(axis) -> None:
    """Turn the tick labels of an x axis to vertical when neighbours overlap."""
    boxes = sorted((t.get_window_extent() for t in axis.get_ticklabels() if t.get_text().strip()),
                   key=lambda b: b.x0)
    if any(a.x1 > b.x0 for a, b in zip(boxes, boxes[1:])):
        axis.set_tick_params(labelrotation=90)


def make_legible(fig: Figure) -> float:
    """Make fig's text legible on a phone; returns its smallest font size, in points.

    Every text smaller than floor_points for the saved width is raised to it (tick labels
    through their axis: ticks made at draw time copy its settings). Then what the larger
    text pushed out of place is put back: a title or axis label longer than its axes is
    broken into lines, crowded x tick labels turn vertical. The figure's layout engine
    (constrained layout) makes room for the rest.
    """
    floor = floor_points(fig.get_size_inches()[0] + 2 * matplotlib.rcParams["savefig.pad_inches"])
    for ax in fig.findobj(Axes):
        for axis in (ax.xaxis, ax.yaxis):
            for which in ("major", "minor"):
                labels = [t for t in axis.get_ticklabels(which=which) if t.get_text().strip()]
                if any(t.get_fontsize() < floor for t in labels):
                    axis.set_tick_params(which=which, labelsize=floor)
    for text in _texts(fig):
        if text.get_fontsize() < floor:
            text.set_fontsize(floor)
    for _ in range(2):
        _lay_out(fig)
        for ax in fig.findobj(Axes):
            for title in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label):
                _wrap(title, ax.bbox.width)
            _wrap(ax.yaxis.label, ax.bbox.height, along_height=True)
        for text in fig.texts:
            _wrap(text, fig.bbox.width)
        for ax in fig.findobj(Axes):
            _upright_if_crowded(ax.xaxis)
    return _smallest_text(fig)


def _lays_out(fig: Figure) -> bool:
    """False when the figure's layout engine gives up (its axes would collapse)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        fig.draw_without_rendering()
    return not any("collapsed" in str(w.message) for w in caught)


def _overlapping_texts(fig: Figure) -> int:
    """How many pairs of texts written in the same axes (values in cells, say) touch:
    closer than about half a space side by side, or overlapping."""
    pairs = 0
    for ax in fig.findobj(Axes):
        texts = [t for t in ax.texts if t.get_visible() and t.get_text().strip()]
        if len(texts) < 2:
            continue
        boxes = np.array([t.get_window_extent().extents for t in texts])
        pad = np.array([0.08 * t.get_fontsize() * fig.dpi / 72 for t in texts])
        x0, y0, x1, y1 = boxes[:, 0] - pad, boxes[:, 1], boxes[:, 2] + pad, boxes[:, 3]
        apart = ((x0[:, None] >= x1[None, :]) | (x0[None, :] >= x1[:, None])
                 | (y0[:, None] >= y1[None, :]) | (y0[None, :] >= y1[:, None]))
        pairs += int(np.triu(~apart, k=1).sum())
    return pairs


def legible_copy(fig: Figure) -> Figure:
    """A copy of fig made legible (make_legible); fig itself is left as it is.

    Raised text may not fit: then the copy is made taller, up to twice, before giving up.
    Texts written in an axes (the values in a heatmap's cells) that would overlap once
    raised need fewer characters or fewer cells, and a figure wider than TOO_WIDE inches
    (panels side by side: viz.stacked_axes stacks them) text too large for its panels:
    the figure's code has to change. In these cases fig is returned as it is, and its
    small text is what the site's test reports.
    """
    import pickle

    if fig.get_size_inches()[0] > TOO_WIDE:
        return fig
    _lay_out(fig)
    overlapping = _overlapping_texts(fig)
    try:
        data = pickle.dumps(fig)
    except Exception:   # an artist that does not pickle (a lambda, say): change fig itself
        make_legible(fig)
        return fig
    for taller in (1, 1.3, 1.6, 2):
        copy = pickle.loads(data)
        plt.close(copy)   # unpickled, a pyplot figure joins pyplot's: it would be shown again
        width, height = copy.get_size_inches()
        copy.set_size_inches(width, height * taller)
        make_legible(copy)
        if _lays_out(copy):
            return copy if _overlapping_texts(copy) <= overlapping else fig
    return fig


def _smallest_text(fig: Figure) -> float:
    return min((t.get_fontsize() for t in _texts(fig)), default=float("inf"))


def notebook_png(fig: Figure):
    """A figure as IPython shows it: legible text (legible_copy), PNG at 2x, displayed at 1x.

    Returns (base64 PNG, {"width", "height"} in CSS px), or None for an empty figure.
    """
    from IPython.core.pylabtools import print_figure

    if not fig.axes and not fig.lines:
        return None
    shown = legible_copy(fig)
    png = print_figure(shown, fmt="retina", bbox_inches="tight",
                       metadata={SMALLEST_TEXT_KEY: f"{_smallest_text(shown):.2f}"})
    width, height = struct.unpack(">II", png[16:24])   # the IHDR chunk
    return base64.b64encode(png).decode("ascii"), {"width": width // 2, "height": height // 2}


def use_in_notebooks() -> bool:
    """Apply STYLE and, in a Jupyter kernel with the inline backend, show figures through
    notebook_png. Returns True when figures go through it. Elsewhere (scripts, tests) it
    changes nothing but STYLE.
    """
    matplotlib.rcParams.update(STYLE)
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel") or "inline" not in matplotlib.rcParams["backend"]:
        return False
    # Importing the inline backend registers its own formatters, once per kernel: do it
    # now, so that ours, registered after, are the ones that stay.
    import matplotlib_inline.backend_inline  # noqa: F401

    for formatter in shell.display_formatter.formatters.values():
        formatter.pop(Figure, None)
    shell.display_formatter.formatters["image/png"].for_type(Figure, notebook_png)
    return True
