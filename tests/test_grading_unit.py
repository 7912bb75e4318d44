"""attncore.grading's machinery, without nbgrader: diagnosis order, guards, the static scan."""
import numpy as np
import pytest

import attncore
from attncore.grading import FeedbackError, check
from attncore.grading.guard import tampering_in_source
from attncore.grading.probe import same


def correct_scores(Q, K):
    return Q @ K.T / np.sqrt(Q.shape[-1])


def test_correct_function_passes_every_suite():
    for suite in ("basic", "hidden"):
        check("attention_scores", correct_scores, suite)


def test_message_names_the_misconception_input_and_fix():
    with pytest.raises(FeedbackError) as failure:
        check("attention_scores", lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1]), "basic")
    text = str(failure.value)
    assert text.startswith("attention_scores: transposed score matrix (K Q^T)")
    assert "Smallest input where it shows (2 queries, 3 keys" in text
    assert "Your function returned:" in text and "shape (3, 2)" in text
    assert "Expected:" in text and "shape (2, 3)" in text
    assert "How to fix:" in text


def test_effective_scale_is_reported():
    with pytest.raises(FeedbackError, match=r"times 0\.25 \(1/d_k\); with d_k = 4 the scale must be"):
        check("attention_scores", lambda Q, K: Q @ K.T / Q.shape[-1], "basic")


def test_calling_the_function_being_written_trips(monkeypatch):
    with pytest.raises(FeedbackError, match="you called attncore.attention_scores, which this exercise does not allow"):
        check("attention_scores", lambda Q, K: attncore.attention_scores(Q, K), "basic")
    assert attncore.attention_scores(np.ones((1, 2)), np.ones((1, 2))).shape == (1, 1)  # restored


def test_replaced_grader_objects_void_the_check(monkeypatch):
    monkeypatch.setattr(np, "allclose", lambda *a, **k: True)
    with pytest.raises(FeedbackError, match="tampering with the grader detected: numpy.allclose"):
        check("attention_scores", correct_scores, "basic")


def test_unknown_names_are_programming_errors():
    with pytest.raises(ValueError, match="no graded function named 'softmaxx'"):
        check("softmaxx", correct_scores)
    with pytest.raises(ValueError, match="has suites"):
        check("attention_scores", correct_scores, "nope")


@pytest.mark.parametrize("source", [
    "import attncore.grading\nattncore.grading.check = print",
    "from attncore import grading as g\ng.check = print",
    "import numpy as np\nnp.testing.assert_allclose = print",
    "import builtins\nbuiltins.len = lambda x: 0",
    "__builtins__.len = lambda x: 0",
    "setattr(np, 'allclose', lambda *a, **k: True)",
    "m = __import__('attncore.grading')",
    "import sys\nsys.modules['attncore.grading'] = None",
    "get_ipython().set_custom_exc((AssertionError,), lambda *a: None)",
])
def test_static_scan_flags_tampering(source):
    assert tampering_in_source(source)


@pytest.mark.parametrize("source", [
    "def softmax(x):\n    x = x - x.max(axis=-1, keepdims=True)\n    e = np.exp(x)\n    return e / e.sum(-1, keepdims=True)",
    "def f(Q, K):\n    S = np.zeros((2, 2))\n    S[0, 1] = 3\n    out = {}\n    out['a'] = S\n    return S",
    "import numpy as np\nnp.random.seed(0)\nx = np.ones(3)\nx[0] += 1",
    "def broken(:\n    pass",  # a syntax error fails the learner's own cell
])
def test_static_scan_leaves_ordinary_code_alone(source):
    assert tampering_in_source(source) == []


def test_same_matches_shapes_values_and_nan():
    assert same(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert not same(np.zeros((2, 3)), np.zeros((3, 2)))
    assert not same(np.array([1.0]), np.array([1.1]))
    assert same(np.float32(1.0) + np.float32(1e-4), np.float32(1.0))  # within float32 tolerance
    assert not same([[1, 2], [3]], np.zeros(2))  # ragged: never equal
