"""The pieces of out-of-process grading: the wire format, observing one call, the worker."""
import _tracemalloc
import math
import sys
import tracemalloc
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import attncore
from attncore.feature_maps import BY_NAME
from attncore.grading import check
from attncore.grading.course import wire
from attncore.grading.course.runner import Session, Worker
from attncore.grading.engine import FeedbackError
from attncore.grading.observe import observe

ARRAYS = hnp.arrays(st.sampled_from([np.float32, np.float64, np.int64, np.bool_]),
                    hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text() | ARRAYS,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)


def same_value(a, b):
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, float):
        return isinstance(b, float) and (a == b or math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(VALUES)
def test_wire_round_trip_keeps_values_types_and_dtypes(value):
    assert same_value(value, wire.decode(wire.encode(value)))


def test_wire_keeps_numpy_scalars_and_feature_maps():
    for scalar in (np.float32(1.5), np.int64(3), np.bool_(True)):
        back = wire.decode(wire.encode(scalar))
        assert type(back) is type(scalar) and back == scalar
    for feature_map in BY_NAME.values():
        assert wire.decode(wire.encode(feature_map)) is feature_map


def test_wire_sends_no_code():
    """A function, an object array or any other object arrives as its type name only."""
    for value in (lambda x: x, np.array([object()]), object(), {1: 2}):
        back = wire.decode(wire.encode(value))
        assert isinstance(back, wire.Opaque), value
    assert wire.decode({"npy": wire._npy(np.arange(3))}).tolist() == [0, 1, 2]


def test_observe_records_notes_and_never_fails_on_them():
    def noisy(x):
        print("hello")
        return np.log(x)  # RuntimeWarning: divide by zero

    seen = observe(noisy, {"x": np.array([0.0, 1.0])})
    assert seen["raised"] is None and seen["returned"][1] == 0
    assert any("RuntimeWarning: divide by zero" in note for note in seen["notes"])
    assert any("printed to stdout: 'hello'" in note for note in seen["notes"])


def test_observe_trips_forbidden_calls_and_restores_them():
    original = attncore.softmax

    def cheat(x):
        return attncore.softmax(x)

    seen = observe(cheat, {"x": np.zeros(3)}, forbidden=("softmax",))
    assert seen["raised"] == ("ForbiddenCall", "attncore.softmax")
    assert attncore.softmax is original


def test_a_module_loaded_after_the_first_call_is_read_on_the_next(monkeypatch):
    """observe reads attncore's modules again only when one was loaded or gained a name; a
    late module's functions and a name added to a loaded module can still be forbidden."""
    observe(lambda x: x, {"x": 0.0}, forbidden=("softmax",))  # the library as loaded now
    late = types.ModuleType("attncore.late")
    exec("def helper(x):\n    return x\n", vars(late))  # defined in attncore.late
    monkeypatch.setitem(sys.modules, "attncore.late", late)
    seen = observe(lambda x: late.helper(x), {"x": 0.0}, forbidden=("late.helper",))
    assert seen["raised"] == ("ForbiddenCall", "attncore.late.helper")
    exec("def added(x):\n    return x\n", vars(late))
    seen = observe(lambda x: late.added(x), {"x": 0.0}, forbidden=("late.added",))
    assert seen["raised"] == ("ForbiddenCall", "attncore.late.added")
    assert late.helper(1.0) == late.added(1.0) == 1.0  # untripped after each call


MB8 = 8 << 20  # np.ones(1 << 20): 8 MB of float64


def _allocate_then(call):
    """A function that holds 8 MB for a moment, frees it, then calls call()."""
    def function(x):
        waste = np.ones(1 << 20)
        del waste
        call()
        return x
    return function


TRACEMALLOC_CALLS = {
    "stop": lambda: tracemalloc.stop(),
    "reset_peak": lambda: tracemalloc.reset_peak(),
    "clear_traces": lambda: tracemalloc.clear_traces(),
    "stop, start": lambda: (tracemalloc.stop(), tracemalloc.start()),
    "_tracemalloc.reset_peak": lambda: _tracemalloc.reset_peak(),
    "_tracemalloc.stop": lambda: _tracemalloc.stop(),
}


@pytest.mark.parametrize("name", TRACEMALLOC_CALLS)
def test_no_tracemalloc_call_of_the_function_lowers_the_peak_measured(name):
    seen = observe(_allocate_then(TRACEMALLOC_CALLS[name]), {"x": 0.0}, measure_memory=True)
    assert seen["raised"] is None and seen["peak_bytes"] >= MB8
    assert not tracemalloc.is_tracing()
    assert all(getattr(tracemalloc, n) is getattr(_tracemalloc, n) for n in ("stop", "reset_peak"))


def test_names_imported_from_tracemalloc_are_redirected_too():
    namespace = {"np": np}
    exec("from tracemalloc import reset_peak\n"
         "def function(x):\n"
         "    waste = np.ones(1 << 20)\n"
         "    del waste\n"
         "    reset_peak()\n"
         "    return x\n", namespace)
    seen = observe(namespace["function"], {"x": 0.0}, measure_memory=True)
    assert seen["peak_bytes"] >= MB8
    assert namespace["reset_peak"] is _tracemalloc.reset_peak


def test_the_function_sees_a_tracemalloc_of_its_own():
    """A learner measuring their own function gets what tracemalloc would tell them alone."""
    def measured(x):
        assert not tracemalloc.is_tracing()
        tracemalloc.start()
        waste = np.ones(1 << 20)
        current, peak = tracemalloc.get_traced_memory()
        del waste
        tracemalloc.reset_peak()
        after = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return current, peak, after, tracemalloc.is_tracing(), tracemalloc.get_traced_memory()

    seen = observe(measured, {"x": 0.0}, measure_memory=True)
    current, peak, after, tracing, stopped = seen["returned"]
    assert MB8 <= current <= peak < MB8 + (1 << 20) and after[1] < 1 << 20
    assert (tracing, stopped) == (False, (0, 0))
    assert seen["peak_bytes"] >= MB8


def test_in_kernel_check_prints_notes_and_names_the_mistake(capsys):
    def scores(Q, K):
        print("working")
        return Q @ K.T / np.sqrt(Q.shape[-1])

    check("attention_scores", scores, "basic")
    assert "Note: your code printed to stdout: 'working'" in capsys.readouterr().out
    with pytest.raises(FeedbackError, match="transposed score matrix"):
        check("attention_scores", lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1]), "basic")


def test_the_worker_holds_no_grader_state(tmp_path):
    worker = Worker(tmp_path, time_limit=30)
    try:
        worker.exec("probe", "import sys\n"
                             "def loaded():\n"
                             "    return [m for m in sys.modules if m.startswith('attncore.grading')]")
        outcome = worker.call("loaded", {}, False)
    finally:
        worker.close()
    assert "attncore.grading.engine" not in outcome.returned
    assert not [m for m in outcome.returned if "suites" in m or "probe" in m]


def test_a_cell_that_hangs_stops_only_itself(tmp_path):
    code = [("a", "x = 1"), ("b", "while True:\n    pass"), ("c", "def f(Q, K):\n    return x")]
    with Session(code, tmp_path, time_limit=2) as session:
        assert "did not finish" in session.load_problems["b"]
        outcome = session.worker.call("f", {"Q": np.zeros(1), "K": np.zeros(1)}, False)
    assert outcome.returned == 1


def test_a_cell_that_raised_when_loaded_shows_its_lines_innermost_last(tmp_path):
    deep = "def f(n):\n    return 1 / 0 if n == 0 else f(n - 1)\n\nf(10)\n"
    code = [("a", "x = 1\ny = [][x]"), ("deep", deep), ("long", "z = 1\n" * 3 + "w = '" + "v" * 1000 + "' + 1")]
    with Session(code, tmp_path, time_limit=30) as session:
        problems = session.load_problems
    assert problems["a"] == "raised IndexError (line 2): list index out of range\n  line 2: y = [][x]"
    lines = problems["deep"].split("\n")
    assert lines[0] == "raised ZeroDivisionError (line 2): division by zero"
    assert lines[1:] == ["  line 2: return 1 / 0 if n == 0 else f(n - 1)"] * 3  # at most three
    assert all(len(line) <= 310 for line in problems["long"].split("\n"))  # shortened
