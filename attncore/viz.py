"""Figures with the course's fixed conventions, and the glue of numbers into the prose
(used by the book only).

Queries on the vertical axis with the first query at the top, keys on the
horizontal axis, masked cells hatched in grey, and the row sums in a bar beside
the heatmap so the reader sees every row add up to 1.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from .invariants import check_rows

MASKED_COLOR = "0.85"


def glue(name, value):
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


def _labels(labels, n, prefix):
    return [f"{prefix}{i}" for i in range(n)] if labels is None else list(labels)


def plot_attention(weights, query_labels=None, key_labels=None, mask=None, ax=None,
                   show_values=None, show_row_sums=True, title=None):
    """Heatmap of weights (T_q, T_k): row i is query i, column j is key j.

    mask (T_q, T_k), True = may attend: masked cells are drawn hatched. The row-sum
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
    allowed = np.ones(w.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), w.shape)
    blocked = ~allowed
    for i, j in zip(*np.nonzero(blocked)):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=MASKED_COLOR,
                               edgecolor="0.6", hatch="///", linewidth=0, label="masked"))
    if max(t_q, t_k) <= 12 if show_values is None else show_values:
        for i, j in zip(*np.nonzero(allowed)):
            ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if w[i, j] < 0.6 else "black")
    if show_row_sums:
        _row_sum_bar(ax, w.sum(axis=1))
    colorbar_axes = ax.inset_axes([1.26 if show_row_sums else 1.03, 0, 0.04, 1])
    ax.figure.colorbar(image, cax=colorbar_axes).set_label("weight")
    return ax


def _row_sum_bar(ax, sums):
    """A horizontal bar per query row, aligned with the heatmap rows."""
    bar = ax.inset_axes([1.02, 0, 0.18, 1], sharey=ax)
    bar.barh(np.arange(len(sums)), sums, color="tab:orange", height=0.6)
    bar.axvline(1, color="black", linewidth=0.8, linestyle="--")
    bar.set_xlim(0, 1.1)
    bar.set_xticks([0, 1])
    bar.set_title("row sum", fontsize=8)
    bar.tick_params(labelleft=False)
    return bar


def simplex_coordinates(points):
    """Map rows of 3 weights (n, 3) on the simplex to 2-D points in an equilateral triangle."""
    p = np.asarray(points, dtype=float)
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
    return p @ corners


def plot_simplex(points, labels=None, ax=None, corner_labels=("key 0", "key 1", "key 2")):
    """The probability simplex of 3 keys as a triangle, with each row (n, 3) as a point.

    Rows must be distributions: a row summing to less than 1 (softmax-1, say) would
    be drawn as if its missing mass went to key 0, so it is refused.
    """
    report = check_rows(np.atleast_2d(points))
    if np.shape(points)[-1] != 3 or not report.on_simplex:
        raise ValueError(f"points must be rows of 3 weights on the simplex, shape (n, 3); got "
                         f"shape {np.shape(points)}: {report}")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4), layout="constrained")
    corners = simplex_coordinates(np.eye(3))
    ax.fill(*corners.T, facecolor="0.95", edgecolor="black")
    for corner, name, offset in zip(corners, corner_labels, [(-0.08, -0.06), (0.08, -0.06), (0, 0.05)]):
        ax.annotate(name, corner, xytext=corner + offset, ha="center", va="center")
    xy = simplex_coordinates(points)
    labels = [None] * len(xy) if labels is None else labels
    for (x, y), label in zip(xy, labels):
        ax.plot(x, y, "o", markersize=7, label=label)
    if any(label is not None for label in labels):
        ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax
