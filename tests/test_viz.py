"""Figures follow the course conventions: first query at the top, masked cells marked."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

import attncore  # noqa: E402
from attncore import viz  # noqa: E402


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


def test_row_sum_bar_shows_each_row_sum(rng):
    w = attncore.softmax(rng.normal(size=(6, 3)))
    ax = viz.plot_attention(w)
    bars = [child for child in ax.child_axes if child.patches]
    assert len(bars) == 1
    widths = [p.get_width() for p in bars[0].patches]
    np.testing.assert_allclose(widths, w.sum(axis=1))


def test_rejects_batched_weights(rng):
    with pytest.raises(ValueError, match=r"shape \(T_q, T_k\), got \(2, 3, 3\)"):
        viz.plot_attention(np.ones((2, 3, 3)) / 3)


def test_simplex_corners_and_centre():
    xy = viz.simplex_coordinates(np.vstack([np.eye(3), np.full(3, 1 / 3)]))
    np.testing.assert_allclose(xy[:3], [[0, 0], [1, 0], [0.5, np.sqrt(3) / 2]])
    np.testing.assert_allclose(xy[3], xy[:3].mean(axis=0))
    ax = viz.plot_simplex(np.full((1, 3), 1 / 3), labels=["uniform"])
    assert ax.get_legend() is not None


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
