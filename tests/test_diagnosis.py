"""The diagnosis that reads the error (engine.diagnosis), reading by reading, on results
whose mistake is known; and the guarantee of the derived mistakes: a name they give is a
change whose effects the learner's results show on every case of the suite."""
import copy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attncore
from attncore.grading.engine import SPECS, Outcome, run_suite
from attncore.grading.engine.diagnosis import Witness, errors, promises, shape, where
from attncore.grading.engine.diagnosis.mutation import mutants
from attncore.grading.engine.probe import drawing, graded_cases, same
from attncore.grading.observe import observe

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning")]  # the fast inner loop: no tier marker


def witness(function, arguments, got=None, raised=None):
    """A failed case of function, with what the learner returned (or raised)."""
    expected = SPECS[function].reference(*copy.deepcopy(arguments).values())
    return Witness("a case", arguments, expected, Outcome(returned=got, raised=raised), False)


def qkv(rng, t_q=3, t_k=5, d_k=4, d_v=2):
    return {"Q": rng.normal(size=(t_q, d_k)), "K": rng.normal(size=(t_k, d_k)),
            "V": rng.normal(size=(t_k, d_v))}


def headlines(findings):
    return [f.headline for f in findings]


# ---------------------------------------------------------------- how (shape.py)

def test_a_constant_factor_is_named_by_the_size_it_is(rng):
    args = qkv(rng)
    w = witness("attention", args, attncore.attention(*args.values()) / 5)
    found = shape.how(SPECS["attention"], w)
    assert found[0].headline == shape.CONSTANT_FACTOR
    assert "1/5 (= 1/T_k, T_k = 5)" in found[0].detail


@given(c=st.floats(-4, 4).filter(lambda c: abs(c) > 0.05 and abs(c - 1) > 0.05),
       seed=st.integers(0, 2 ** 32 - 1))
def test_any_constant_factor_or_sign_is_read(c, seed):
    args = qkv(np.random.default_rng(seed))
    w = witness("attention", args, c * attncore.attention(*args.values()))
    assert headlines(shape.how(SPECS["attention"], w))[0] in (shape.CONSTANT_FACTOR, shape.SIGN)


def test_a_factor_per_row_says_what_it_is_made_of(rng):
    x = rng.normal(size=(3, 5))
    got = attncore.softmax(x) * np.exp(x.max(axis=-1, keepdims=True))
    found = shape.how(SPECS["softmax"], witness("softmax", {"scores": x}, got))
    assert found[0].headline == shape.ROW_FACTOR and "exp(the row's maximum)" in found[0].detail


def test_a_mask_shifted_by_one_key_and_a_transposed_one():
    shifted = np.tri(4, 4, k=1, dtype=bool)
    found = shape.how(SPECS["causal_mask"], witness("causal_mask", {"t_q": 4, "t_k": 4}, shifted))
    assert shape.SHIFTED in headlines(found) and shape.TOO_MANY in headlines(found)
    transposed = np.tri(4, 4, dtype=bool).T
    found = shape.how(SPECS["causal_mask"], witness("causal_mask", {"t_q": 4, "t_k": 4}, transposed))
    assert shape.TRANSPOSED in headlines(found)


def test_counts_wrapped_around_off_by_one_or_three_halves():
    args = dict(n_layers=32, n_kv_heads=32, head_dim=128, seq_len=4096, batch=1, bytes_per_value=2)
    right = attncore.kv_cache_bytes(**args)
    for got, named in ((int(np.int32(right - 2 ** 32)), shape.WRAPPED),
                       (right // 2 * 3, shape.FACTOR_REPLACED), (right + 1, shape.OFF_BY_ONE)):
        assert named in headlines(shape.how(SPECS["kv_cache_bytes"], witness(
            "kv_cache_bytes", args, got))), got
    half = witness("kv_head_for", {"q_head": 6, "n_q_heads": 8, "n_kv_heads": 2}, 1.5)
    assert headlines(shape.how(SPECS["kv_head_for"], half)) == [shape.NOT_AN_INTEGER]


def test_one_answer_for_every_input_is_read_across_cases():
    cases = [witness("kv_head_for", {"q_head": h, "n_q_heads": 8, "n_kv_heads": 2}, 0)
             for h in (1, 5, 7)]
    assert shape.across(cases).headline == shape.CONSTANT
    assert shape.across(cases[:2]) is None  # two cases are too few to say "always"


# ---------------------------------------------------------------- where (where.py)

def test_only_the_last_key_differs(rng):
    args = {"Q": rng.normal(size=(2, 4)), "K": rng.normal(size=(3, 4))}
    got = attncore.attention_scores(*args.values())
    got[:, -1] = 0
    found = where.where(SPECS["attention_scores"], witness("attention_scores", args, got))
    assert "only the last key (2 of 0-2)" in found.detail and "yours are 0 there" in found.detail


def test_only_the_blocked_entries_differ(rng):
    scores, mask = rng.normal(size=(3, 4)), np.tri(3, 4, k=1, dtype=bool)
    got = attncore.softmax(scores, mask=mask)
    got[~mask] = 0.25
    found = where.where(SPECS["masked_softmax"], witness(
        "masked_softmax", {"scores": scores, "mask": mask}, got))
    assert found.headline == where.MASKED_ONLY


def test_the_sequence_that_differs_is_told_by_its_length():
    args = {"lengths": np.array([2, 4, 1]), "t_k": 4}
    got = attncore.masks.key_padding(args["lengths"], 4)
    got[1] = False
    found = where.where(SPECS["key_padding_mask"], witness("key_padding_mask", args, got))
    assert "lengths[1] = 4 = t_k: nothing to block (no padding)" in found.detail


def test_numbers_moved_to_the_wrong_places_are_traced_to_the_input(rng):
    x = rng.normal(size=(2, 3, 4))
    got = x.reshape(2, 2, 3, 2)  # a bare reshape: heads mix tokens
    found = where.moved(SPECS["split_heads"], witness("split_heads", {"x": x, "n_heads": 2}, got))
    assert found.headline == where.MOVED and "where x[" in found.detail


# ---------------------------------------------------------------- errors.py

def test_a_broadcast_error_says_which_axis_is_missing(rng):
    args = qkv(rng, t_q=2, t_k=3, d_v=5)
    found = errors.translate(SPECS["linear_attention"], {**args, "feature_map": None}, "ValueError",
                             "operands could not be broadcast together with shapes (2,5) (2,) ")
    assert found[0] == errors.BROADCAST and "[:, None]" in found[1] and "T_q = 2" in found[1]


def test_a_matmul_error_names_the_product_that_runs(rng):
    args = {"q": rng.normal(size=4), "K": rng.normal(size=(5, 4)), "lse": 0.3}
    try:
        args["q"] @ args["K"]
    except ValueError as error:
        found = errors.translate(SPECS["row_from_lse"], args, "ValueError", str(error))
    assert found[0] == errors.MATMUL and "q @ K.T" in found[1]


@pytest.mark.parametrize("function,arguments,error,named,says", [
    ("split_heads", {"x": np.zeros((2, 5, 12)), "n_heads": 4}, ("ValueError", "cannot reshape "
     "array of size 120 into shape (2,5,4,1)"), errors.RESHAPE, "should be 3 = d"),
    ("is_row_stochastic", {"W": np.ones(3) / 3}, ("AxisError", "axis 1 is out of bounds for array "
     "of dimension 1"), errors.NO_AXIS, "single row"),
    ("is_row_stochastic", {"W": np.ones((2, 3)) / 3}, ("TypeError", "ufunc 'isfinite' not "
     "supported for the input types"), errors.NONE_USED, "atol is None"),
    ("sparsemax", {"x": np.zeros((2, 3))}, ("ValueError", "`indices` and `arr` must have the "
     "same number of dimensions"), errors.TAKE_ALONG, "keepdims=True"),
])
def test_raw_errors_are_translated(function, arguments, error, named, says):
    found = errors.translate(SPECS[function], arguments, *error)
    assert found[0] == named and says in found[1], found


# ---------------------------------------------------------------- promises.py

def test_weight_on_blocked_keys_and_rows_off_by_an_epsilon(rng):
    scores, mask = rng.normal(size=(3, 4)), np.tri(3, 4, dtype=bool)
    leaky = attncore.softmax(scores)
    found = promises.broken(SPECS["masked_softmax"], witness(
        "masked_softmax", {"scores": scores, "mask": mask}, leaky))
    assert promises.MASS_ON_BLOCKED in headlines(found)
    x = rng.normal(size=(2, 3))
    short = attncore.softmax(x) * (1 - 1e-9)
    assert promises.ROWS in headlines(promises.broken(SPECS["softmax"], witness(
        "softmax", {"scores": x}, short)))


def _learner(function):
    return lambda arguments, measure_memory: Outcome(**observe(function, arguments))


def test_a_result_that_moves_with_blocked_scores_or_with_the_order_of_the_keys(rng):
    scores, mask = rng.normal(size=(3, 4)), np.tri(3, 4, k=1, dtype=bool)
    leaky = lambda scores, mask: attncore.softmax(scores)  # noqa: E731 (a learner's function)
    w = witness("masked_softmax", {"scores": scores, "mask": mask}, leaky(scores, mask))
    assert promises.DEPENDS_ON_BLOCKED in headlines(
        promises.metamorphic(SPECS["masked_softmax"], w, _learner(leaky)))
    args = {**qkv(rng, t_k=6), "block_size": 2}

    def first_tiles(Q, K, V, block_size):  # keys past the first two tiles left out
        return attncore.attention(Q, K[:4], V[:4])

    w = witness("flash_attention", args, first_tiles(**args))
    assert promises.DEPENDS_ON_ORDER in headlines(
        promises.metamorphic(SPECS["flash_attention"], w, _learner(first_tiles)))


# ---------------------------------------------------------------- derived mistakes

SAMPLED = [(name, plain, index) for name, spec in SPECS.items() for plain in spec.plain[:1]
           for index in (3, 11)]


@pytest.mark.parametrize("function,plain,index", SAMPLED,
                         ids=[f"{f}-{i}" for f, _, i in SAMPLED])
def test_a_derived_name_is_a_change_that_does_what_the_learner_did(function, plain, index):
    """A learner whose function is one change of a right answer: where a suite names a
    derived mistake, a change of that name does what the learner's function did on every
    case of the suite (run again here), so the name is one its results show."""
    spec, learner = SPECS[function], mutants(plain)[index].run
    by_headline = {}
    for mutant in mutants(plain):
        by_headline.setdefault(mutant.headline, []).append(mutant)
    for suite in spec.suites:
        if suite == "memory":
            continue
        verdict = run_suite(spec, suite, _learner(learner), seed=5)
        if verdict.passed or verdict.misconception not in by_headline:
            continue
        cases = []
        for case, draw in graded_cases(spec, suite, 5):
            with drawing(draw):
                cases.append(case.make())
        assert any(all(_alike(named.run, learner, args) for args in cases)
                   for named in by_headline[verdict.misconception]), (suite, verdict.message)


def _alike(one, other, arguments):
    """Do two functions return the same (or raise the same) on these arguments?"""
    said = []
    for function in (one, other):
        try:
            with np.errstate(all="ignore"):
                said.append(("returned", function(*copy.deepcopy(arguments).values())))
        except Exception as error:
            said.append(("raised", type(error).__name__))
    if said[0][0] != said[1][0]:
        return False
    return said[0][0] == "raised" or same(said[1][1], said[0][1])


def test_a_right_answer_never_reaches_the_diagnosis():
    for name, spec in SPECS.items():
        for suite in (s for s in spec.suites if s != "memory"):
            verdict = run_suite(spec, suite, _learner(spec.plain[0]), seed=7)
            assert verdict.passed, (name, suite, verdict.message)
