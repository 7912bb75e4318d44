"""One mistake costs its own function: a function that fails only because it calls a wrong
function of its notebook is graded again with a stand-in (engine.stand_ins) in the wrong
one's place, and gets its points when it is right there."""
import ast
import builtins
import inspect
import textwrap

import numpy as np
import pytest

from attncore.grading.course.runner import _stood_in
from attncore.grading.engine import SPECS, Outcome, run_suite, stand_ins
from attncore.grading.observe import observe

from .gradekit import submission, verdicts

WITH_STAND_IN = [name for name, spec in SPECS.items() if spec.stand_in]


def defined_as_the_worker_defines_it(spec):
    """The stand-in, from its source, in a namespace holding only np (course.worker)."""
    namespace = {"np": np}
    exec(textwrap.dedent(inspect.getsource(spec.stand_in)), namespace)
    return namespace[spec.stand_in.__name__]


def test_the_functions_other_graded_functions_call_have_stand_ins():
    assert {"attention_scores", "attention_weights", "causal_mask", "kv_head_for",
            "online_softmax_stats", "split_heads"} <= set(WITH_STAND_IN)


@pytest.mark.parametrize("function", WITH_STAND_IN)
@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_a_stand_in_passes_every_suite_of_its_function(function, seed):
    spec = SPECS[function]
    stand_in = defined_as_the_worker_defines_it(spec)
    for suite in spec.suites:
        verdict = run_suite(spec, suite, lambda arguments, measure_memory: Outcome(
            **observe(stand_in, arguments, spec.forbidden, measure_memory)), seed)
        assert verdict.passed, (suite, verdict.message)


PLAIN = [(name, plain) for name, spec in SPECS.items() for plain in spec.plain]


def test_every_graded_function_has_a_plain_right_answer_in_stand_ins():
    """The derived mistakes change the code of these (engine.diagnosis.mutation)."""
    assert {name for name, _ in PLAIN} == set(SPECS)
    assert all(spec.stand_in is None or spec.stand_in in spec.plain for spec in SPECS.values())


@pytest.mark.parametrize("function,plain", PLAIN, ids=[f"{f}-{p.__name__}" for f, p in PLAIN])
@pytest.mark.parametrize("seed", [None, 3])
def test_a_plain_right_answer_passes_every_suite_of_its_function(function, plain, seed):
    spec = SPECS[function]
    for suite in spec.suites:
        verdict = run_suite(spec, suite, lambda arguments, measure_memory: Outcome(
            **observe(plain, arguments, spec.forbidden, measure_memory)), seed)
        assert verdict.passed, (suite, verdict.message)


@pytest.mark.parametrize("function", WITH_STAND_IN + [f"{f}:{p.__name__}" for f, p in PLAIN])
def test_a_stand_in_uses_numpy_alone(function):
    """It runs where the exercise forbids attncore's functions: it names no global but np
    and builtins."""
    name, _, plain = function.partition(":")
    source = getattr(stand_ins, plain) if plain else SPECS[name].stand_in
    tree = ast.parse(textwrap.dedent(inspect.getsource(source)))
    local = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
             and isinstance(node.ctx, ast.Store)} | {
        arg.arg for node in ast.walk(tree) if isinstance(node, ast.arguments)
        for arg in node.args + node.kwonlyargs}
    loaded = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
              and isinstance(node.ctx, ast.Load)}
    assert loaded - local - set(dir(builtins)) <= {"np"}


def test_the_worker_believes_no_stand_in_it_was_not_sent():
    sent = [{"name": "attention_scores"}]
    assert _stood_in(["attention_scores", "attention", 3], sent) == ("attention_scores",)
    with pytest.raises(TypeError):
        _stood_in("attention_scores", sent)


# (assignment, the wrong upstream function, its source, the downstream functions it fails)
WRONG_UPSTREAM = [
    ("01-convention", "attention_scores", "def attention_scores(Q, K):\n    return Q @ K.T\n",
     ["attention_weights", "attention"]),
    ("01-convention", "attention_scores",
     "def attention_scores(Q, K):\n    raise NotImplementedError()\n",
     ["attention_weights", "attention"]),
    ("03-masking", "causal_mask",
     "def causal_mask(t_q, t_k):\n    i, j = np.indices((t_q, t_k))\n"
     "    return j < i + (t_k - t_q)\n",
     ["sliding_window_mask"]),
    ("04-heads", "kv_head_for",
     "def kv_head_for(q_head, n_q_heads, n_kv_heads):\n    return q_head % n_kv_heads\n",
     ["grouped_query_attention"]),
    ("07-real-model", "split_heads", "def split_heads(x, n_heads):\n    B, T, D = x.shape\n"
     "    return x.reshape(B, n_heads, T, D // n_heads)\n", ["layer_attention"]),
]


# Callers written to call the wrong function (the reference solutions do not).
CALLERS = {"03-masking": {"sliding_window_mask": (
    "def sliding_window_mask(t, window):\n"
    "    i, j = np.indices((t, t))\n"
    "    return causal_mask(t, t) & (j > i - window)\n")}}


def by_function(result):
    grouped = {}
    for grade_id, verdict in result.items():
        grouped.setdefault(grade_id.rsplit("-", 1)[0], []).append(verdict)
    return grouped


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.parametrize("assignment, upstream, source, downstream", WRONG_UPSTREAM)
def test_a_wrong_upstream_costs_its_own_points_only(assignment, upstream, source, downstream):
    replaced = {upstream: source, **CALLERS.get(assignment, {})}
    result = by_function(verdicts(submission(assignment, replaced), sandbox="none", seed=5))
    assert not any(verdict.passed for verdict in result[upstream])
    for function in downstream:
        for verdict in result[function]:
            assert verdict.passed, verdict.text()
            assert (f"Your {function} is right: it failed only because your {upstream} is "
                    f"wrong") in verdict.text()
    others = set(result) - {upstream, *downstream}
    assert all(v.passed and not v.stood_in for f in others for v in result[f])


@pytest.mark.slow
@pytest.mark.pipeline
def test_a_downstream_mistake_of_its_own_is_named_with_the_reference_upstream():
    result = by_function(verdicts(submission("01-convention", {
        "attention_scores": "def attention_scores(Q, K):\n    return Q @ K.T\n",
        "attention_weights": "def attention_weights(Q, K):\n"
                             "    return softmax(attention_scores(Q, K), axis=0)\n"}),
        sandbox="none", seed=5))
    for verdict in result["attention_weights"]:
        assert not verdict.passed and "softmax over the wrong axis" in verdict.message
        assert "mistake above is in attention_weights itself" in verdict.notes[0]
    for verdict in result["attention"]:  # right with the reference attention_weights
        assert verdict.passed and "because your attention_weights is wrong" in verdict.text()


@pytest.mark.slow
@pytest.mark.pipeline
def test_a_right_downstream_that_calls_nothing_wrong_is_not_graded_again():
    result = by_function(verdicts(submission("01-convention", {
        "attention": "def attention(Q, K, V):\n    return softmax(Q @ K.T, axis=-1) @ V\n"}),
        sandbox="none", seed=5))
    assert all(v.passed and not v.stood_in for f in ("attention_scores", "attention_weights")
               for v in result[f])
    assert not any(v.passed or v.stood_in for v in result["attention"])


CAPTURE = """
captured = []

def attention_scores(Q, K):
    if captured:                       # the reference, kept from a regrade
        return captured[0](Q, K)
    return Q @ K.T


mine = attention_scores


def attention_weights(Q, K):
    if attention_scores is not mine:      # during a regrade: the stand-in
        captured.append(attention_scores)
    return softmax(attention_scores(Q, K), axis=-1)
"""


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.parametrize("reverse", [False, True])
def test_a_kept_stand_in_earns_its_function_nothing(reverse):
    """A stand-in is sent only after every cell of its function was graded, whatever the
    order of the submission's cells: keeping it to answer later cells earns nothing."""
    notebook = submission("01-convention", {"attention_scores": CAPTURE,
                                            "attention_weights": "pass\n"})
    if reverse:
        notebook.cells = notebook.cells[::-1]
    result = by_function(verdicts(notebook, sandbox="none", seed=5))
    assert not any(verdict.passed for verdict in result["attention_scores"])
    assert all(verdict.passed for verdict in result["attention_weights"])


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.parametrize("assignment, upstream, source, downstream", WRONG_UPSTREAM[:1])
def test_stand_ins_work_in_the_sandbox(assignment, upstream, source, downstream):
    from attncore.grading.course import sandbox

    if sandbox.available():
        pytest.skip(f"no sandbox here: {sandbox.available()}")
    result = by_function(verdicts(submission(assignment, {upstream: source}),
                                  sandbox="bubblewrap", seed=5))
    assert all(v.passed for f in downstream for v in result[f])
    assert not any(v.passed for v in result[upstream])

