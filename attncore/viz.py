"""Figures with the course's fixed conventions, and the glue of numbers into the prose
(used by the book only).

Queries on the vertical axis with the first query at the top, keys on the
horizontal axis, masked cells hatched in grey, and the row sums in a bar beside
the heatmap so the reader sees every row add up to 1. A figure with several panels
stacks them vertically (`stacked_axes`), at most FIGURE_WIDTH inches wide, so each
panel stays readable on a phone as well as on a desktop.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Polygon, Rectangle
from numpy.typing import ArrayLike

from . import legibility
from ._checks import as_mask
from .invariants import check_rows

# Every chapter imports viz: from here on, its figures keep text of at least 9 CSS px on
# a 390 px phone, drawn at 2x (attncore/legibility.py has the rule).
legibility.use_in_notebooks()

MASKED_COLOR = "0.85"
# Inches. A side-by-side figure 16 inches wide is drawn about 358 px wide on a 390 px
# phone, under a quarter of its size; 6.4 inches keeps a panel at over half its size.
FIGURE_WIDTH = 6.4


def glue(name: str, value: object) -> None:
    """Glue a computed value for {glue:text} in a chapter's prose (needs myst-nb).

    NumPy scalars become Python ones, so format specs such as :.2e apply; booleans
    become the text "True" or "False".
    """
    from myst_nb import glue as myst_glue

    if isinstance(value, (bool, np.bool_)):
        value = str(bool(value))
    elif isinstance(value, (int, np.integer)):
        value = int(value)
    elif not isinstance(value, str):
        value = float(value)
    myst_glue(name, value, display=False)


def _labels(labels: Sequence[str] | None, n: int, prefix: str) -> list:
    return [f"{prefix}{i}" for i in range(n)] if labels is None else list(labels)


def plot_attention(weights: ArrayLike, query_labels: Sequence[str] | None = None,
                   key_labels: Sequence[str] | None = None, mask: ArrayLike | None = None, ax: Axes | None = None,
                   show_values: bool | None = None, show_row_sums: bool = True, title: str | None = None) -> Axes:
    """Heatmap of weights (T_q, T_k): row i is query i, column j is key j.

    mask: boolean, broadcasting to (T_q, T_k), True = may attend (an additive 0/-inf
    mask is refused, not drawn inverted): masked cells are drawn hatched. The row-sum
    bar is drawn in an axis attached to the right. show_values writes each weight
    in its cell (default: when the matrix is at most 12 x 12). Returns the heatmap Axes.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2:
        raise ValueError(f"weights must have shape (T_q, T_k), got {w.shape}; pick one head and batch")
    t_q, t_k = w.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.5 * t_k, 0.6 + 0.45 * t_q), layout="constrained")
    image = ax.imshow(w, cmap="viridis", vmin=0, vmax=1, origin="upper", aspect="auto")
    key_labels = _labels(key_labels, t_k, "k")
    long_labels = max(len(str(label)) for label in key_labels) > 3
    ax.set_xticks(range(t_k), key_labels, rotation=90 if long_labels else 0)
    ax.set_yticks(range(t_q), _labels(query_labels, t_q, "q"))
    ax.set_xlabel("keys (columns)")
    ax.set_ylabel("queries (rows)")
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, pad=28)
    allowed = np.ones(w.shape, bool) if mask is None else as_mask(mask, w.shape)
    blocked = ~allowed
    for i, j in zip(*np.nonzero(blocked)):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=MASKED_COLOR,
                               edgecolor="0.6", hatch="///", linewidth=0, label="masked"))
    show = max(t_q, t_k) <= 12 if show_values is None else show_values
    if show:
        for i, j in zip(*np.nonzero(allowed)):
            # ".27", not "0.27": a weight is at most 1, and three characters stay inside
            # a narrow cell at a size a phone can read (attncore/legibility.py)
            ax.text(j, i, f"{w[i, j]:.2f}".removeprefix("0"), ha="center", va="center", fontsize=7,
                    color="white" if w[i, j] < 0.6 else "black")
    if show_row_sums:
        _row_sum_bar(ax, w.sum(axis=1))
    colorbar_axes = ax.inset_axes([1.26 if show_row_sums else 1.03, 0, 0.04, 1])
    ax.figure.colorbar(image, cax=colorbar_axes).set_label("weight")
    return ax


def _row_sum_bar(ax: Axes, sums: np.ndarray) -> None:
    """A horizontal bar per query row, aligned with the heatmap rows."""
    bar = ax.inset_axes([1.02, 0, 0.18, 1], sharey=ax)
    bar.barh(np.arange(len(sums)), sums, color="tab:orange", height=0.6)
    bar.axvline(1, color="black", linewidth=0.8, linestyle="--")
    bar.set_xlim(0, 1.1)
    bar.set_xticks([0, 1])
    bar.set_title("row sum", fontsize=8)
    bar.tick_params(labelleft=False)


def simplex_coordinates(points: ArrayLike) -> np.ndarray:
    """Map rows of 3 weights (n, 3) on the simplex to 2-D points in an equilateral triangle."""
    p = np.asarray(points, dtype=float)
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
    return p @ corners


def plot_simplex(points: ArrayLike, labels: Sequence[str | None] | None = None, ax: Axes | None = None,
                 corner_labels: Sequence[str] = ("key 0", "key 1", "key 2")) -> Axes:
    """The probability simplex of 3 keys as a triangle, with each row (n, 3) as a point
    (one row (3,) is one point).

    Rows must be distributions: a row summing to less than 1 (softmax-1, say) would
    be drawn as if its missing mass went to key 0, so it is refused.
    """
    p = np.atleast_2d(np.asarray(points, dtype=float))
    report = check_rows(p)
    if p.ndim != 2 or p.shape[-1] != 3 or not report.on_simplex:
        raise ValueError(f"points must be rows of 3 weights on the simplex, shape (n, 3) or (3,); got "
                         f"shape {np.shape(points)}: {report}")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4), layout="constrained")
    corners = simplex_coordinates(np.eye(3))
    ax.fill(*corners.T, facecolor="0.95", edgecolor="black")
    for corner, name, offset in zip(corners, corner_labels, [(-0.08, -0.06), (0.08, -0.06), (0, 0.05)]):
        ax.annotate(name, corner, xytext=corner + offset, ha="center", va="center")
    xy = simplex_coordinates(p)
    labels = [None] * len(xy) if labels is None else labels
    for (x, y), label in zip(xy, labels):
        ax.plot(x, y, "o", markersize=7, label=label)
    if any(label is not None for label in labels):
        ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def plot_sub_stochastic(rows: ArrayLike, ax: Axes, labels: Sequence[str | None] | None = None,
                        color: str = "tab:red") -> Axes:
    """Rows of 3 weights (n, 3) that sum to at most 1 (softmax-1), drawn over plot_simplex's triangle.

    A row a of mass s = sum(a) is projected orthogonally onto the plane of the simplex,
    to a + (1 - s) * centre: the rows of mass s fill a copy of the triangle shrunk by s
    about its centre, drawn dashed around each point so a point near the centre is not
    mistaken for a flat distribution. labels (one per row) are written at the top corner
    of each shrunk triangle. Returns the Axes.
    """
    a = np.atleast_2d(np.asarray(rows, dtype=float))
    report = check_rows(a)
    if a.shape[-1] != 3 or a.ndim != 2 or not report.sub_stochastic:
        raise ValueError(f"rows must be rows of 3 non-negative weights summing to at most 1, shape (n, 3); "
                         f"got shape {np.shape(rows)}: {report}")
    centre = np.full(3, 1 / 3)
    labels = [None] * len(a) if labels is None else labels
    for row, label in zip(a, labels):
        mass = row.sum()
        corners = simplex_coordinates(mass * np.eye(3) + (1 - mass) * centre)  # the rows of this mass
        ax.fill(*corners.T, facecolor="none", edgecolor=color, linestyle="--", linewidth=0.8)
        ax.plot(*simplex_coordinates(row + (1 - mass) * centre), "s", color=color, ms=5)
        if label is not None:
            ax.annotate(label, corners[2], xytext=(9, -10), textcoords="offset points", fontsize=8,
                        color=color, bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
    return ax


def stacked_axes(n: int, height: float = 3.0, width: float = FIGURE_WIDTH,
                 **subplots_kw: Any) -> tuple[Figure, list[Axes]]:
    """A figure with n panels stacked vertically: returns (fig, axes), axes a list of n Axes.

    One panel per row keeps every panel readable at any screen width; panels side by
    side shrink to strips on a phone. height is per panel, in inches; subplots_kw
    (sharex, height_ratios, ...) go to plt.subplots.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be at least 1 panel, got {n}")
    if width > FIGURE_WIDTH:
        raise ValueError(f"width must be at most FIGURE_WIDTH = {FIGURE_WIDTH} inches, got {width}")
    fig, axes = plt.subplots(n, 1, figsize=(width, height * n), layout="constrained",
                             squeeze=False, **subplots_kw)
    return fig, list(axes[:, 0])


def convex_hull_2d(points: ArrayLike) -> np.ndarray:
    """Vertices (m, 2) of the convex hull of points (n, 2), counter-clockwise, no collinear ones.

    Andrew's monotone chain: sort the points, then build the lower and the upper chain,
    dropping the last point while it does not make a left turn.
    """
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 2 or len(p) < 3:
        raise ValueError(f"points must have shape (n, 2) with n >= 3, got shape {p.shape}")
    pts = sorted(map(tuple, p))

    def left_turn(o, a, b):  # z-component of (a - o) x (b - o) is positive
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]) > 0

    def chain(seq):
        out = []
        for q in seq:
            while len(out) >= 2 and not left_turn(out[-2], out[-1], q):
                out.pop()
            out.append(q)
        return out[:-1]

    return np.array(chain(pts) + chain(pts[::-1]))


def plot_values_hull(values: ArrayLike, ax: Axes | None = None, include_origin: bool = False) -> Axes:
    """The value vectors (T_k, 2) as labelled points, with their convex hull shaded.

    Every softmax attention output lies in this hull. include_origin also draws, dashed,
    the hull of the values and the origin, where softmax-1 outputs lie. Returns the Axes.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] != 2:
        raise ValueError(f"values must have shape (T_k, 2) to be drawn in the plane, got shape {v.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4.5), layout="constrained")
    if include_origin:
        ax.fill(*convex_hull_2d(np.vstack([v, np.zeros((1, 2))])).T, facecolor="none",
                edgecolor="tab:red", linestyle="--", label="hull of the values and 0 (softmax-1)")
        ax.plot(0, 0, "+", color="tab:red", markersize=12, mew=2)
        ax.annotate("origin", (0, 0), xytext=(8, -4), textcoords="offset points", color="tab:red")
    ax.fill(*convex_hull_2d(v).T, facecolor="tab:blue", alpha=0.15, edgecolor="tab:blue",
            label="hull of the values")
    ax.plot(*v.T, "s", color="tab:blue", markersize=7)
    for j, point in enumerate(v):
        ax.annotate(f"$v_{j}$", point, xytext=(6, 4), textcoords="offset points")
    ax.set_xlabel("value coordinate 0")
    ax.set_ylabel("value coordinate 1")
    ax.set_aspect("equal")
    return ax


def plot_tile_order(tiles: Sequence[tuple[int, int, int]], t_q: int, t_k: int, block_q: int,
                    block_k: int | None = None, ax: Axes | None = None) -> Axes:
    """The (T_q, T_k) score matrix cut into tiles, numbered in the order they were computed.

    tiles: a list of (query block, first key, number of keys), one per computed tile,
    in order. Tiles crossing the causal (top-left) diagonal are orange with their
    masked half dotted; tiles never computed are hatched. Returns the Axes.
    """
    block_k = block_q if block_k is None else block_k
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5), layout="constrained")
    order = {(b, k0): n for n, (b, k0, _) in enumerate(tiles)}
    q_starts, k_starts = range(0, t_q, block_q), range(0, t_k, block_k)
    for b, q0 in enumerate(q_starts):
        q1 = min(q0 + block_q, t_q)
        for k0 in k_starts:
            k1 = min(k0 + block_k, t_k)
            if (b, k0) not in order:
                ax.add_patch(Rectangle((k0, q0), k1 - k0, q1 - q0, facecolor=MASKED_COLOR,
                                       edgecolor="0.5", hatch="///", linewidth=0.8))
                continue
            crosses = k1 - 1 > q0  # straddles the diagonal: masked inside
            ax.add_patch(Rectangle((k0, q0), k1 - k0, q1 - q0, edgecolor="black", linewidth=0.8,
                                   facecolor="tab:orange" if crosses else "tab:blue", alpha=0.75))
            if crosses:
                ax.add_patch(Polygon([(k0, q0), (k1, q0), (k1, q1)], closed=True, facecolor="none",
                                     edgecolor="0.35", hatch="...", linewidth=0))
            x, y = (k0 + 0.3 * (k1 - k0), q0 + 0.7 * (q1 - q0)) if crosses else ((k0 + k1) / 2, (q0 + q1) / 2)
            ax.text(x, y, str(order[(b, k0)]), ha="center", va="center", color="white",
                    fontsize=10, fontweight="bold")
    ax.plot([0, min(t_q, t_k)], [0, min(t_q, t_k)], color="black", linestyle="--", linewidth=1)
    ax.set_xlim(0, t_k)
    ax.set_ylim(t_q, 0)  # first query at the top
    ax.set_xticks([*k_starts, t_k])
    ax.set_yticks([*q_starts, t_q])
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("keys (columns), streamed in the inner loop")
    ax.set_ylabel("queries (rows), outer loop")
    ax.set_aspect("equal")
    ax.legend(handles=[Patch(facecolor="tab:blue", alpha=0.75, label="computed"),
                       Patch(facecolor="tab:orange", alpha=0.75, label="computed, masked inside"),
                       Patch(facecolor=MASKED_COLOR, hatch="///", edgecolor="0.5", label="skipped")],
              loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=3, fontsize=8, frameon=False)
    return ax
