"""attncore.grading's engine, without nbgrader: messages, the catalogue vocabulary, same()."""
import copy

import numpy as np
import pytest

import attncore
from attncore.bert import AttentionWeights
from attncore.grading import check
from attncore.grading.engine import SPECS, FeedbackError, FunctionSpec, Misconception, Outcome, run_suite
from attncore.grading.engine.probe import MEMORY_UNMEASURED, STRICT_DETECTORS, _modified, recognise_error, same


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



@pytest.mark.parametrize("learner,named", [
    (lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1]), "transposed score matrix (K Q^T)"),
    (lambda Q, K: (_ for _ in ()).throw(NotImplementedError()), "not written yet"),
    (lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1]), ""),
])
def test_a_verdict_carries_what_its_first_line_names(learner, named):
    """Verdict.misconception is the headline of the feedback's first line (empty on a pass),
    so a report can count mistakes without reading the text."""
    spec = SPECS["attention_scores"]
    verdict = run_suite(spec, "basic", lambda arguments, _: Outcome(**_called(learner, arguments)))
    assert verdict.misconception == named
    assert verdict.passed == (named == "")
    if named:
        assert verdict.message.splitlines()[0].startswith(f"attention_scores: {named}")


def _called(function, arguments):
    """The Outcome fields of calling function in this process."""
    try:
        return {"returned": function(*copy.deepcopy(arguments).values()),
                "arguments_after": arguments}
    except Exception as error:
        return {"raised": (type(error).__name__, str(error))}

@pytest.mark.parametrize("function,learner,scale", [
    ("attention_scores", lambda Q, K: Q @ K.T / Q.shape[-1],
     r"0\.25 \(1/d_k: the 1/sqrt\(d_k\) applied twice\)"),
    ("attention", lambda Q, K, V: attncore.softmax(Q @ K.T / np.sqrt(V.shape[-1])) @ V,
     r"0\.7071 \(1/sqrt\(d_v\)"),
])
def test_effective_scale_is_reported(function, learner, scale):
    with pytest.raises(FeedbackError, match=rf"times {scale}.*; with d_k = 4 the scale is"):
        check(function, learner, "basic")


def test_calling_the_function_being_written_trips():
    with pytest.raises(FeedbackError, match="you called attncore.attention_scores, which this "
                                            "exercise does not allow"):
        check("attention_scores", lambda Q, K: attncore.attention_scores(Q, K), "basic")
    assert attncore.attention_scores(np.ones((1, 2)), np.ones((1, 2))).shape == (1, 1)  # restored


def test_unknown_names_are_programming_errors():
    with pytest.raises(ValueError, match="no graded function named 'softmaxx'"):
        check("softmaxx", correct_scores)
    with pytest.raises(ValueError, match="has suites"):
        check("attention_scores", correct_scores, "nope")


def test_a_variant_names_its_mistake_with_its_own_detail():
    mistake = Misconception("doubled or tripled", "multiply by 1",
                            variants=(lambda x: None, lambda x: 2 * x, lambda x: 3 * x),
                            detail=["never", "twice", "three times"])
    x = {"x": np.arange(3.0)}
    assert mistake.recognise(x, 3 * x["x"], x["x"]) == "three times"
    assert mistake.recognise(x, x["x"], x["x"] + 1) is None  # no variant gives that
    zero = {"x": np.zeros(3)}  # every variant equals the reference there: it says nothing
    assert mistake.recognise(zero, np.zeros(3), np.zeros(3)) is None


def test_an_error_is_named_by_the_only_variant_that_raises_it_or_by_on_error():
    def unpack(x):
        rows, cols = x.shape
        return x

    spec = FunctionSpec("f", lambda x: x, {}, [
        Misconception("unpacks two axes", "use x.shape[-1]", variants=(unpack,)),
        Misconception("any error", "read it", on_error=lambda a, t, m: f"{t} seen"),
    ])
    x = {"x": np.zeros((1, 2, 3))}
    named, detail = recognise_error(spec, x, "ValueError", "too many values to unpack (expected 2)")
    assert named.name == "unpacks two axes"
    named, detail = recognise_error(spec, x, "TypeError", "something else")
    assert (named.name, detail) == ("any error", "TypeError seen")


def test_a_broken_detector_is_silent_for_learners_and_raises_when_strict(monkeypatch):
    """A detector that raises is no verdict on the learner: the misconception is not named
    and grading goes on; with ATTNCORE_STRICT_DETECTORS=1 (the catalogue tests) it raises."""
    def broken(arguments, got, expected):
        raise IndexError("a detector bug")

    mistake = Misconception("never seen", "", detect=broken)
    x = {"x": np.arange(3.0)}
    monkeypatch.delenv(STRICT_DETECTORS, raising=False)
    assert mistake.recognise(x, x["x"] + 1, x["x"]) is None
    monkeypatch.setenv(STRICT_DETECTORS, "1")
    with pytest.raises(IndexError, match="a detector bug"):
        mistake.recognise(x, x["x"] + 1, x["x"])


def test_same_matches_shapes_values_and_nan():
    assert same(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert not same(np.zeros((2, 3)), np.zeros((3, 2)))
    assert not same(np.array([1.0]), np.array([1.1]))
    assert same(np.float32(1.0) + np.float32(1e-4), np.float32(1.0))  # within float32 tolerance
    assert not same([[1, 2], [3]], np.zeros(2))  # ragged: never equal


def test_modified_names_every_changed_part_of_an_argument():
    """In-place changes are found inside the weights of a layer, lists, tuples and dicts,
    and named down to the field or item; a copy with equal values (NaN included) is unchanged."""
    rng = np.random.default_rng(0)
    fields = {name: rng.standard_normal((4, 4) if name.startswith("W") else 4)
              for name in ("W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o")}
    weights = AttentionWeights(**fields, n_heads=2)
    after = copy.deepcopy(weights)
    assert _modified("weights", weights, after) == []
    after.W_q[0, 0] += 1
    after.b_k[:] = 0
    assert _modified("weights", weights, after) == ["weights.W_q", "weights.b_k"]
    nested = {"x": [np.array([1.0, np.nan]), (np.zeros(2), 3)], "y": "text"}
    changed = copy.deepcopy(nested)
    assert _modified("arg", nested, changed) == []
    changed["x"][1][0][1] = 5
    assert _modified("arg", nested, changed) == ["arg['x'][1][0]"]
    assert _modified("arg", [1, 2], [1]) == ["arg"]
    assert _modified("x", np.zeros(3), np.zeros((3, 1))) == ["x"]
    assert _modified("n", 3, 4) == []  # numbers are passed by value


def test_a_memory_case_without_a_measurement_is_not_passed():
    """A reply that carries no peak (a worker whose measuring code was replaced) cannot pass
    a memory case, and the feedback says that nothing was measured."""
    spec = SPECS["flash_attention"]

    def call(arguments, measure_memory):
        returned = spec.reference(*arguments.values())
        return Outcome(returned=returned, arguments_after=arguments,
                       peak_bytes=None if measure_memory else 0)

    assert run_suite(spec, "basic", call).passed
    verdict = run_suite(spec, "memory", call)
    assert not verdict.passed and MEMORY_UNMEASURED in verdict.message
    assert "could not measure" in verdict.message


SHAPE_SET_IN_PLACE = '''
def softmax(scores):
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - m)
    out = e / np.sum(e, axis=-1, keepdims=True)
    scores.shape = (-1,)          # flattened in place, as a shortcut for later
    return out
'''


def _shape_verdicts(grade):
    from .gradekit import submission

    return {gid: v for gid, v in grade(submission("02-simplex", {"softmax": SHAPE_SET_IN_PLACE})).items()
            if gid.startswith("softmax")}


def test_a_shape_set_in_place_is_caught_in_process():
    from attncore.grading.engine.probe import INPUT_MODIFIED

    from .gradekit import in_process_verdicts

    found = _shape_verdicts(in_process_verdicts)
    assert found and all(v.misconception == INPUT_MODIFIED for v in found.values()), found


@pytest.mark.slow
@pytest.mark.pipeline
def test_a_shape_set_in_place_is_caught_through_the_worker():
    """x.shape = ... changes the worker's view of an array lent through the arena, not its
    bytes: the worker reports the shapes after the call, and the grader compares them."""
    from attncore.grading.engine.probe import INPUT_MODIFIED

    from .gradekit import verdicts

    found = _shape_verdicts(verdicts)
    assert found and all(v.misconception == INPUT_MODIFIED for v in found.values()), found


# ---------------------------------------------------------------- a learner's odd result is the learner's

HOSTILE_RETURNS = {  # softmax's source, what the feedback says it returned
    "a ragged list whenever the output is not finite": (
        "import numpy as np\ndef softmax(scores):\n    e = np.exp(scores)\n"
        "    w = e / e.sum(axis=-1, keepdims=True)\n"
        "    return w if np.isfinite(w).all() else [[1.0], [1.0, 2.0]]\n",
        "a list of 2 items, rows of lengths 1, 2"),
    "an object whose __array__ and __repr__ raise": (
        "class Mine:\n    def __array__(self, *a, **k):\n        raise ValueError('no array')\n"
        "    def __repr__(self):\n        raise ValueError('no repr')\n"
        "def softmax(scores):\n    return Mine()\n", "an object of type Mine"),
    "a float whose __eq__ and __float__ raise": (
        "class Mine(float):\n    __hash__ = float.__hash__\n"
        "    def __eq__(self, other):\n        raise ValueError('no eq')\n"
        "    def __float__(self):\n        raise ValueError('no float')\n"
        "def softmax(scores):\n    return Mine(1.0)\n", "an object of type Mine"),
    "a dict": ("def softmax(scores):\n    return {'weights': scores}\n", "a dict of 1 item"),
}


@pytest.mark.parametrize("hostile", HOSTILE_RETURNS)
def test_a_result_no_comparison_can_read_fails_the_case_in_process(hostile):
    """Red team attempt 29: whatever the learner's function returns, handling it is no grader
    error; a value NumPy cannot read as an array of numbers fails the case, named, with
    what was seen (no method of the learner's object called to say so)."""
    from attncore.grading.engine.probe import NOT_AN_ARRAY

    from .gradekit import _observed

    source, what = HOSTILE_RETURNS[hostile]
    namespace = {}
    exec(source, namespace)
    spec = SPECS["softmax"]
    call = _observed(namespace["softmax"], spec.forbidden)
    verdict = run_suite(spec, "extreme", call, seed=7)
    assert not verdict.passed and verdict.misconception == NOT_AN_ARRAY
    assert f"Your function returned {what}: NumPy" in verdict.message
    assert run_suite(spec, "basic", call, seed=7).passed == hostile.startswith("a ragged list")


@pytest.mark.slow
@pytest.mark.pipeline
def test_a_result_no_comparison_can_read_fails_the_case_through_the_worker(tmp_path, monkeypatch):
    """The same through a worker: an automatic failing verdict for each, never a grader error
    (the wire hands the float over as the plain 1.0 it holds: a wrong shape). And where a
    diagnosis fails on what came back, the learner's list is the learner's to fix, the
    same failure on an array the grader's error."""
    from dataclasses import replace

    from attncore.grading.course.runner import Session
    from attncore.grading.engine.probe import NOT_AN_ARRAY, SHAPE_OR_DTYPE

    monkeypatch.delenv(STRICT_DETECTORS, raising=False)
    for hostile, (source, what) in HOSTILE_RETURNS.items():
        with Session([("softmax", source)], tmp_path, time_limit=30, seed=7) as session:
            verdict = session.grade("softmax-extreme")
        assert not verdict.passed and not verdict.grader_error, (hostile, verdict.message)
        assert verdict.misconception == (SHAPE_OR_DTYPE if "float" in hostile else NOT_AN_ARRAY)
        shown = "an object of type" if what.startswith("an object") else what  # the wire's stand-in
        assert "float" in hostile or f"Your function returned {shown}" in verdict.message

    def advice(arguments, returned, expected):
        raise ValueError("a diagnosis that fails")

    monkeypatch.setitem(SPECS, "softmax", replace(SPECS["softmax"], advice=advice))
    right = ("import numpy as np\ndef softmax(scores):\n"
             "    e = np.exp(scores - scores.max(axis=-1, keepdims=True))\n"
             "    return (e / e.sum(axis=-1, keepdims=True)){}\n")
    for ending, learners in ((".tolist()", True), ("", False)):
        with Session([("softmax", right.format(ending))], tmp_path, time_limit=30) as session:
            verdict = session.grade("softmax-basic")
        assert not verdict.passed and bool(verdict.grader_error) != learners, verdict.message
        assert (verdict.misconception == NOT_AN_ARRAY) == learners
