"""The pieces of out-of-process grading: the wire format, observing one call, the worker,
its deadlines and budget, grader errors, and what a sealed worker refuses."""
import _tracemalloc
import dataclasses
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
from attncore.grading.course.process import Budget, Worker, WorkerStopped
from attncore.grading.course.runner import Session
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


# ---------------------------------------------------------------- every wait has a deadline

STOP_READING = "import time, attncore.grading.course.wire as w\nw.receive = lambda s: time.sleep(1e7)\n"


def test_a_worker_that_stops_reading_cannot_block_a_large_request(tmp_path):
    """Red team a01: the request (1 MB, more than a pipe holds) is written under the same
    deadline as the reply, so the grader stops the worker instead of waiting forever."""
    worker = Worker(tmp_path, time_limit=2)
    try:
        worker.exec("stop", STOP_READING)
        with pytest.raises(WorkerStopped, match="it stopped reading what the grader sent it; "
                                                "no answer within 2 s"):
            worker.exec("big", "#" * (1 << 20))
    finally:
        worker.close()


def test_a_notebook_that_spends_its_budget_gets_the_rest_not_graded(tmp_path):
    """Red team a02: slow cells and functions that end the process on every call cost at
    most the notebook's budget of time and restarts, then the rest fails saying so."""
    code = [("slow", "import os, time\ntime.sleep(0.3)"),
            *((name, f"def {name}(*arguments):\n    os._exit(0)")
              for name in ("attention_scores", "attention_weights", "attention"))]
    budget = Budget(seconds=60, restarts=2)
    with Session(code, tmp_path, time_limit=5, budget=budget) as session:
        verdicts = {grade_id: session.grade(grade_id) for grade_id in
                    ("attention_scores-basic", "attention_scores-hidden", "attention_weights-basic",
                     "attention-basic")}
    assert budget.restarted == 3  # two restarts, and the one refused
    for grade_id in ("attention_scores-basic", "attention_scores-hidden", "attention_weights-basic"):
        assert "ended (exit code 0)" in verdicts[grade_id].message
    assert verdicts["attention-basic"].misconception == "not graded"
    assert "it is not started again more than 2 times" in verdicts["attention-basic"].message

    slow = Budget(seconds=2, restarts=5)
    with Session(code[:1], tmp_path, time_limit=5, budget=slow) as session:
        session.budget.started -= slow.seconds  # as if its cells had taken that long
        verdict = session.grade("attention_weights-basic")
    assert "used its whole grading time of 2 s" in verdict.message and not verdict.passed


# ---------------------------------------------------------------- a grader's error is the grader's

def test_a_failing_reference_or_case_is_a_grader_error_not_the_learners(tmp_path, monkeypatch):
    """Code review N1: a correct softmax graded with a reference that raises is told it is
    the grader's fault, and nbgrader leaves the cell for manual grading."""
    from attncore.grading.engine import SPECS

    spec = SPECS["softmax"]
    code = [("softmax", "import numpy as np\ndef softmax(x):\n"
                        "    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
                        "    return e / e.sum(axis=-1, keepdims=True)")]
    broken_case = dataclasses.replace(spec.suites["basic"][0], make=lambda: {}["x"])
    for broken in (dataclasses.replace(spec, reference=lambda x: {}["no such key"]),
                   dataclasses.replace(spec, suites={**spec.suites, "basic": [broken_case]})):
        monkeypatch.setitem(SPECS, "softmax", broken)
        monkeypatch.delenv("ATTNCORE_STRICT_DETECTORS", raising=False)
        with Session(code, tmp_path, time_limit=30) as session:
            verdict = session.grade("softmax-basic")
            assert not verdict.passed and verdict.misconception == "grader error"
            assert verdict.message.startswith("softmax: grader error: tell your instructor.")
            assert "KeyError" in verdict.grader_error and "Traceback" in verdict.grader_error
            assert "How to fix" not in verdict.message  # nothing for the learner to fix
            monkeypatch.setenv("ATTNCORE_STRICT_DETECTORS", "1")
            with pytest.raises(KeyError):
                session.grade("softmax-basic")


def test_a_result_of_the_learners_own_that_breaks_the_comparison_still_costs_the_learner(tmp_path):
    code = [("softmax", "class Mine:\n    def __array__(self, *a, **k):\n        raise ValueError('no')\n"
                        "def softmax(x):\n    return {'a': Mine()}")]
    with Session(code, tmp_path, time_limit=30) as session:
        verdict = session.grade("softmax-basic")
    assert not verdict.passed and not verdict.grader_error


# ---------------------------------------------------------------- forbidden means forbidden

ROUTES = {  # ways to the exact softmax through attncore, none of them named softmax
    "exp minus logsumexp": "np.exp(x - attncore.logsumexp(x, keepdims=True))",
    "the private core": "sys.modules['attncore.softmax']._masked_softmax(x)",
    "flash.tile_state": "(lambda s: s.acc / s.l[:, None])(attncore.flash.tile_state(x, np.eye(x.shape[-1])))",
    "a module not loaded yet": "__import__('attncore.jit').jit.softmax(x)",
}


@pytest.mark.parametrize("route", ROUTES)
def test_what_an_exercise_forbids_is_what_it_computes(tmp_path, route):
    """Code review N4: in 02-simplex every attncore route to the softmax trips once the
    worker is sealed, while default_atol, which the exercise allows, still works; before
    sealing (and in this process) the route gives the exact softmax: the attack is real."""
    from attncore.grading.course.allowed import ALLOWED
    from attncore.grading.engine import SPECS

    cell = ("import sys, numpy as np, attncore, attncore.flash\n"
            f"def route(x):\n    return {ROUTES[route]}\n"
            "def atol(n):\n    return attncore.invariants.default_atol(n, np.float64)\n")
    x = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    if route != "a module not loaded yet":  # importing attncore.jit here compiles Numba kernels
        namespace = {}
        exec(cell, namespace)
        np.testing.assert_allclose(namespace["route"](x), attncore.softmax(x), rtol=1e-12)
    worker = Worker(tmp_path, time_limit=30)
    try:
        worker.exec("cell", cell)
        worker.seal(ALLOWED["02-simplex"], SPECS["softmax"].forbidden)
        refused = worker.call("route", {"x": x}, False)
        allowed = worker.call("atol", {"n": 3}, False)
    finally:
        worker.close()
    assert refused.raised[0] == "ForbiddenCall", refused
    assert allowed.raised is None and allowed.returned == attncore.invariants.default_atol(3, np.float64)


def test_every_assignment_has_an_allowlist_and_what_it_allows_still_works(tmp_path):
    from attncore.grading.course.allowed import ALLOWED
    from attncore.grading.engine import ASSIGNMENTS

    assert set(ALLOWED) == set(ASSIGNMENTS)
    worker = Worker(tmp_path, time_limit=30)
    try:
        worker.exec("cell", "import numpy as np\nfrom attncore import softmax\n"
                            "def use(x):\n    return softmax(x, mask=x > 0)\n")
        worker.seal(ALLOWED["01-convention"], ("attention_scores", "attention_weights", "attention"))
        outcome = worker.call("use", {"x": np.array([[1.0, 2.0, -1.0]])}, False)
    finally:
        worker.close()
    assert outcome.raised is None
    np.testing.assert_allclose(outcome.returned, attncore.softmax(np.array([[1.0, 2.0, -1.0]]),
                                                                  mask=np.array([[True, True, False]])))


# ---------------------------------------------------------------- memory the grader cannot measure

# Red team a14: a thread takes over the worker's request loop (and reports a peak of 0),
# then the main thread exits, so the thread-group leader is a zombie with no memory figures.
TAKEOVER = '''
import ctypes, os, sys, threading
from attncore.grading.course import worker as W, wire
from attncore.grading.course.arena import Arena

def _loop(namespace=get_ipython().user_ns):
    requests = os.fdopen(int(sys.argv[1]), "rb", closefd=False)
    replies = os.fdopen(int(sys.argv[2]), "wb", closefd=False)
    arena = Arena.attach(int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else None
    wire.send(replies, {"raised": None, "notes": []})  # this very cell's reply
    while (request := wire.receive(requests)) is not None:
        if request["op"] == "exec":
            reply = W.run_cell(namespace, request["name"], request["source"])
        elif request["op"] == "seal":
            reply = W.seal(request["allowed"], request["forbidden"])
        else:
            reply = W.call(namespace, request, arena)
            reply["peak_bytes"] = 0
        wire.send(replies, reply)

threading.Thread(target=_loop).start()
ctypes.CDLL(None).pthread_exit(None)
'''


def test_without_a_control_group_the_worker_alone_is_measured_from_its_start(tmp_path):
    """Unsandboxed (no control group), the worker, alone and held to the seccomp filter
    from its start (before any cell), is measured from /proc, sealed or not."""
    grow = "import numpy as np\ndef grow(n):\n    return float(np.ones((n, 1024)).sum())\n"
    worker = Worker(tmp_path, time_limit=30)
    try:
        worker.exec("grow", grow)
        unsealed = worker.call("grow", {"n": 4096}, True)
        worker.seal(None, ())
        sealed = worker.call("grow", {"n": 4096}, True)
    finally:
        worker.close()
    assert 30e6 < unsealed.peak_bytes < 60e6 and 30e6 < sealed.peak_bytes < 60e6, (unsealed, sealed)


def test_a_zombie_leader_leaves_the_memory_unmeasured_never_the_workers_word(tmp_path):
    """Without a control group the grader reads the worker process's own figures, and
    only while it is alone, alive and sealed: here its main thread has exited, so the
    call's memory is unmeasured (the memory case fails), whatever the worker reports."""
    worker = Worker(tmp_path, time_limit=30)
    try:
        worker.exec("takeover", TAKEOVER)
        worker.exec("scores", "def scores(Q, K):\n    return (Q @ K.T).sum()\n")
        worker.seal(None, ())
        outcome = worker.call("scores", {"Q": np.ones((2000, 8)), "K": np.ones((2000, 8))}, True)
    finally:
        worker.close()
    assert outcome.returned == 2000 * 2000 * 8  # the takeover answered the call
    assert outcome.peak_bytes is None
    assert outcome.notes[0] == ("the grader could not measure the memory of this call: the process "
                                "running your code had ended its main thread")


# ---------------------------------------------------------------- the second red team

def test_no_process_starts_in_the_worker_from_its_start_and_the_grader_checks_every_thread(
        tmp_path, monkeypatch):
    """Second red team #16, #21: the worker's seal ran on code a cell could replace, and
    the grader took its word. The filter that refuses new processes is the worker's first
    act, before any cell: a cell that replaces the seal, then forks while loading or from
    a thread it started, is refused; the grader reads from /proc that every thread
    carries the filter (a process without it is reported), and makes no call when one
    does not."""
    import subprocess

    from attncore.grading.course import process, seccomp

    from .test_red_team import FAKE_SEAL

    worker = Worker(tmp_path, time_limit=30)
    unfiltered = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        reply = worker.exec("cell", FAKE_SEAL + """
import os, threading
refused = []
def fork():
    try:
        os.fork()
    except OSError as error:
        refused.append(error.errno)
fork()
thread = threading.Thread(target=fork)
thread.start()
thread.join()
threading.Thread(target=threading.Event().wait, daemon=True).start()  # a thread that stays
def touch(path):
    open(path, "w").close()
    return refused
""")
        assert reply["raised"] is None, reply
        worker.seal(None, ())
        assert seccomp.unfiltered(worker.pid) is None
        assert "carries 0 seccomp filter(s)" in seccomp.unfiltered(unfiltered.pid)
        assert worker.call("touch", {"path": str(tmp_path / "a")}, False).returned == [1, 1]  # EPERM
        monkeypatch.setattr(process.seccomp, "unfiltered", lambda pid: "its thread 7 carries 0")
        outcome = worker.call("touch", {"path": str(tmp_path / "b")}, False)
    finally:
        unfiltered.kill()
        unfiltered.wait()
        worker.close()
    assert "could not confirm that the process running your code can start no other process " \
           "(its thread 7 carries 0), so the call was not made" in outcome.stopped
    assert not (tmp_path / "b").exists()


def test_memory_held_before_the_call_counts_when_the_call_reuses_or_drops_it(tmp_path):
    """Second red team #7, #8: the memory case measured growth over the memory in use when
    the call began, so a buffer filled at load and reused, or 40 MB held since load and
    dropped when the call starts, hid the whole score matrix. Now what the call touches,
    and its peak over the lowest of its start and its end, count: each loses the memory
    case (without a sandbox, as in the self-check off Linux sandboxes), a tiled one keeps it."""
    from attncore.grading.engine import SPECS

    from .gradekit import reference_sources
    from .test_red_team import FLASH_BALLAST, FLASH_BALLAST_DROPPED, FLASH_PREALLOCATED

    case = SPECS["flash_attention"].suites["memory"][0]
    arguments = case.make()
    sources = {"tiled": reference_sources("05-flash")["flash_attention"],
               "preallocated": FLASH_PREALLOCATED, "ballast": FLASH_BALLAST,
               "ballast dropped": FLASH_BALLAST_DROPPED}
    peaks = {}
    for name, source in sources.items():
        worker = Worker(tmp_path, time_limit=30)
        try:
            assert worker.exec("cell", "import numpy as np\n" + source)["raised"] is None
            worker.seal(None, ())
            peaks[name] = worker.call("flash_attention", dict(arguments), True).peak_bytes
        finally:
            worker.close()
    allowed = case.max_extra_bytes(arguments)
    assert peaks.pop("tiled") < allowed, allowed
    assert all(peak > 1.5 * allowed for peak in peaks.values()), (peaks, allowed)


def _resident_bytes():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


# the next cell: small (its request is all written before the flood is read), or more than a
# pipe holds (the red team's case: the grader's write blocks while the flood comes, until its
# deadline; or, when the flood was seen first, the worker's write to the pipe the grader
# stopped reading fails, and it ends)
NEXT_CELLS = {"a small cell": ("x = 1", "sent the grader a message it did not ask for"),
              "a 1 MB cell": ("#" * (1 << 20), "it stopped reading what the grader sent it|"
                                               "the process running your code ended")}


@pytest.mark.parametrize("next_cell", NEXT_CELLS)
def test_a_flood_of_replies_stops_the_worker_not_the_graders_memory(tmp_path, next_cell):
    """Second red team #2 of the table: the worker's replaced receive wrote twenty 30 MiB
    frames to its reply pipe while the grader's write waited, and the grader parsed and
    queued every one (1 GiB in 3 s). A frame that starts when no request awaits a reply
    now stops the worker before its body is read (here 16 frames of 16 MiB; one that
    starts while the next request is being written passes for its reply, so the small
    cell may take two requests)."""
    from .test_red_team import flood

    source, why = NEXT_CELLS[next_cell]
    worker = Worker(tmp_path, time_limit=2)
    try:
        assert worker.exec("flood", flood(16, 16))["raised"] is None
        before = _resident_bytes()
        with pytest.raises(WorkerStopped, match=why):
            for _ in range(2):
                worker.exec("next", source)
        grown = _resident_bytes() - before
    finally:
        worker.close()
    assert grown < 100 << 20, f"the grader grew by {grown / 2**20:.0f} MiB"


GC_ROUTES = r'''
import gc, types
import attncore.invariants
def _code(f):
    return next(r for r in gc.get_referents(f) if type(r) is types.CodeType)
def _own(x):
    return x
def _twin(x):
    return None
seen = {}
for route, source in {"__code__ =": "_twin.__code__ = code",
                      "FunctionType": "types.FunctionType(code, {})",
                      "exec": "exec(code, {})"}.items():
    for whose, function in {"own": _own, "library": attncore.invariants.check_rows}.items():
        code = _code(function)
        try:
            exec(source)
            seen[route, whose] = "ran"
        except PermissionError:
            seen[route, whose] = "refused"
        except Exception:  # the code ran (and failed on the arguments it lacked)
            seen[route, whose] = "ran"
seen = {" ".join(key): value for key, value in seen.items()}
def probe():
    return seen
'''


def test_library_code_taken_with_gc_cannot_run_in_a_module_the_exercise_keeps(tmp_path):
    """Second red team #17, within a module the sandbox keeps: 02-simplex keeps invariants,
    whose check_rows it forbids (a tripwire). Its code object, reached with
    gc.get_referents, could be put into a function of the learner's and run untripped.
    Putting it into a function, building one from it, or exec'ing it is refused now; the
    same routes work for the learner's own code."""
    from attncore.grading.course.allowed import ALLOWED, kept_modules

    worker = Worker(tmp_path, time_limit=30, library=kept_modules(ALLOWED["02-simplex"]))
    try:
        assert worker.exec("routes", GC_ROUTES)["raised"] is None
        seen = worker.call("probe", {}, False).returned
    finally:
        worker.close()
    routes = ("__code__ =", "FunctionType", "exec")
    assert seen == {**{f"{route} own": "ran" for route in routes},
                    **{f"{route} library": "refused" for route in routes}}, seen
