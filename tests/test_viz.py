"""Figures follow the course conventions: first query at the top, masked cells marked."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import Rectangle

import attncore
from attncore import viz

plt.switch_backend("Agg")  # draw off-screen, whatever the machine's default backend


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_queries_are_rows_with_the_first_at_the_top(rng):
    w = attncore.softmax(rng.normal(size=(3, 5)))
    ax = viz.plot_attention(w, query_labels=["The", "cat", "sat"])
    image = ax.get_images()[0]
    np.testing.assert_array_equal(image.get_array(), w)  # not transposed
    bottom, top = ax.get_ylim()
    assert top < bottom  # y grows downwards: row 0 is drawn at the top
    assert [t.get_text() for t in ax.get_yticklabels()] == ["The", "cat", "sat"]
    assert len(ax.get_xticks()) == 5
    assert "queries" in ax.get_ylabel() and "keys" in ax.get_xlabel()


def test_masked_cells_are_marked_and_not_annotated(rng):
    mask = attncore.masks.causal(4)
    w = attncore.softmax(rng.normal(size=(4, 4)), mask=mask)
    ax = viz.plot_attention(w, mask=mask)
    hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
    assert sorted((int(p.get_y() + 0.5), int(p.get_x() + 0.5)) for p in hatched) == sorted(
        zip(*np.nonzero(~mask))
    )
    assert len(ax.texts) == mask.sum()


def test_additive_mask_is_refused_not_drawn_inverted(rng):
    """Review 3.5.7: np.asarray(mask, bool) turned 0 (allowed) into False and -inf into True."""
    allowed = attncore.masks.causal(4)
    w = attncore.softmax(rng.normal(size=(4, 4)), mask=allowed)
    with pytest.raises(ValueError, match=r"mask must be a boolean array.*got dtype float32 with shape \(4, 4\)"):
        viz.plot_attention(w, mask=attncore.masks.to_additive(allowed))
    ax = viz.plot_attention(w, mask=allowed[-1:])  # a boolean mask still broadcasts: (1, T_k)
    assert not [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]


def test_row_sum_bar_shows_each_row_sum(rng):
    w = attncore.softmax(rng.normal(size=(6, 3)))
    ax = viz.plot_attention(w)
    bars = [child for child in ax.child_axes if child.patches]
    assert len(bars) == 1
    widths = [p.get_width() for p in bars[0].patches]
    np.testing.assert_allclose(widths, w.sum(axis=1))


def test_rejects_batched_weights():
    with pytest.raises(ValueError, match=r"shape \(T_q, T_k\), got \(2, 3, 3\)"):
        viz.plot_attention(np.ones((2, 3, 3)) / 3)


def test_simplex_corners_and_centre():
    xy = viz.simplex_coordinates(np.vstack([np.eye(3), np.full(3, 1 / 3)]))
    np.testing.assert_allclose(xy[:3], [[0, 0], [1, 0], [0.5, np.sqrt(3) / 2]])
    np.testing.assert_allclose(xy[3], xy[:3].mean(axis=0))
    ax = viz.plot_simplex(np.full((1, 3), 1 / 3), labels=["uniform"])
    assert ax.get_legend() is not None


def test_simplex_draws_a_single_row_as_one_point():
    """Review 3.5.3: a 1-D row raised a TypeError while unpacking its coordinates."""
    row = np.array([0.2, 0.3, 0.5])
    ax = viz.plot_simplex(row, labels=["one row"])
    points = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(points) == 1 and points[0].get_label() == "one row"
    np.testing.assert_allclose(np.ravel(points[0].get_xydata()), viz.simplex_coordinates(row))


def test_simplex_refuses_rows_that_are_not_distributions():
    with pytest.raises(ValueError, match=r"rows of 3 weights on the simplex.*got shape \(1, 3\)"):
        viz.plot_simplex(attncore.softmax_one(np.array([[1.0, 2.0, 0.5]])))
    with pytest.raises(ValueError, match=r"got shape \(1, 4\)"):
        viz.plot_simplex(np.full((1, 4), 0.25))


def test_glue_hands_myst_nb_plain_python_values(monkeypatch):
    import myst_nb

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: glued.update({name: value}))
    for name, value in [("i", np.int64(3)), ("x", np.float32(0.5)), ("b", np.True_), ("s", "text")]:
        viz.glue(name, value)
    assert glued == {"i": 3, "x": 0.5, "b": "True", "s": "text"}
    assert type(glued["i"]) is int and type(glued["x"]) is float


def test_stacked_axes_put_one_panel_per_row_within_the_width():
    fig, axes = viz.stacked_axes(3, height=2.0)
    assert len(axes) == 3
    assert fig.get_size_inches()[0] <= viz.FIGURE_WIDTH
    fig.canvas.draw()
    boxes = [ax.get_position() for ax in axes]
    assert boxes[0].y0 > boxes[1].y0 > boxes[2].y0  # top to bottom
    assert all(abs(b.x0 - boxes[0].x0) < 0.05 for b in boxes)  # one column
    with pytest.raises(ValueError, match="width must be at most FIGURE_WIDTH = 6.4 inches, got 10"):
        viz.stacked_axes(2, width=10)
    with pytest.raises(ValueError, match="n must be at least 1 panel, got 0"):
        viz.stacked_axes(0)


def test_convex_hull_drops_interior_and_collinear_points():
    square = np.array([[0, 0], [2, 0], [2, 2], [0, 2]], float)
    points = np.vstack([square, [[1, 1], [1, 0], [0.5, 1.5]]])  # interior, on an edge, interior
    hull = viz.convex_hull_2d(points)
    assert sorted(map(tuple, hull)) == sorted(map(tuple, square))
    x, y = hull.T
    assert 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y) == 4.0  # counter-clockwise: positive area
    with pytest.raises(ValueError, match=r"shape \(n, 2\) with n >= 3, got shape \(2, 2\)"):
        viz.convex_hull_2d(square[:2])


def test_values_hull_labels_every_value_and_can_add_the_origin():
    v = np.array([[3.0, 1.5], [1.8, 3.2], [0.8, 2.0], [1.6, 0.6], [2.0, 2.0]])
    ax = viz.plot_values_hull(v)
    assert [t.get_text() for t in ax.texts] == [f"$v_{j}$" for j in range(5)]
    assert len(ax.patches) == 1
    np.testing.assert_allclose(ax.patches[0].get_xy()[:-1], viz.convex_hull_2d(v))
    ax = viz.plot_values_hull(v, include_origin=True)
    assert len(ax.patches) == 2 and "origin" in [t.get_text() for t in ax.texts]
    with pytest.raises(ValueError, match=r"values must have shape \(T_k, 2\).*got shape \(5, 3\)"):
        viz.plot_values_hull(np.ones((5, 3)))


def test_tile_order_numbers_computed_tiles_and_hatches_skipped_ones():
    tiles = [(0, 0, 2), (1, 0, 2), (1, 2, 1)]  # causal 3 x 3 in blocks of 2: the top-right tile is skipped
    ax = viz.plot_tile_order(tiles, 3, 3, 2)
    assert [t.get_text() for t in ax.texts] == ["0", "1", "2"]
    skipped = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch() == "///"]
    assert [(p.get_x(), p.get_y()) for p in skipped] == [(2, 0)]
    bottom, top = ax.get_ylim()
    assert top < bottom  # first query at the top


def test_sub_stochastic_rows_are_projected_inside_their_shrunk_triangle():
    rows = attncore.softmax_one(np.array([[1.0, 0.6, -0.2], [-2.0, -2.4, -3.2]]))
    ax = viz.plot_simplex(np.full((1, 3), 1 / 3))
    before = len(ax.lines)
    viz.plot_sub_stochastic(rows, ax, labels=["a", "b"])
    points = [line.get_xydata()[0] for line in ax.lines[before:]]
    for row, point in zip(rows, points):
        mass = row.sum()
        np.testing.assert_allclose(point, viz.simplex_coordinates(row + (1 - mass) / 3))
    dashed = [p for p in ax.patches if p.get_linestyle() == "--"]
    assert len(dashed) == 2
    centre = viz.simplex_coordinates(np.full(3, 1 / 3))
    side = np.linalg.norm(dashed[1].get_xy()[1] - dashed[1].get_xy()[0])
    assert np.isclose(side, rows[1].sum())  # the unit triangle shrunk by the row's mass
    assert np.allclose(dashed[1].get_xy()[:3].mean(axis=0), centre)
    assert [t.get_text() for t in ax.texts][-2:] == ["a", "b"]


def test_sub_stochastic_refuses_rows_above_one_and_other_shapes():
    ax = viz.plot_simplex(np.full((1, 3), 1 / 3))
    with pytest.raises(ValueError, match=r"summing to at most 1, shape \(n, 3\); got shape \(1, 3\)"):
        viz.plot_sub_stochastic(np.array([[0.6, 0.6, 0.1]]), ax)
    with pytest.raises(ValueError, match=r"got shape \(1, 4\)"):
        viz.plot_sub_stochastic(np.full((1, 4), 0.2), ax)
