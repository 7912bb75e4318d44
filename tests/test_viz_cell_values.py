"""plot_attention writes each weight in its cell by default only while the matrix is at
most 12 x 12; show_values overrides that either way (review 3.2.4 rewrote the test of
this as two lines instead of a nested conditional). Values are written without their
leading zero (".08"), so that they fit their cells at a legible size."""
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from attncore import viz  # noqa: E402


@pytest.mark.parametrize("t, show_values, written", [
    (12, None, True), (13, None, False),  # the default depends on the size
    (13, True, True), (3, False, False),  # an explicit choice wins
])
def test_cell_values_by_default_and_on_request(t, show_values, written):
    weights = np.full((t, t), 1 / t)
    ax = viz.plot_attention(weights, show_values=show_values)
    values = [text for text in ax.texts if text.get_text() == f"{1 / t:.2f}".removeprefix("0")]
    assert len(values) == (t * t if written else 0)
    plt.close("all")

