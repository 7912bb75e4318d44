"""Every bad input raises ValueError with a message that names the argument and
what it got (its shape, dtype or value), so a learner knows which array to fix."""
import re

import numpy as np
import pytest

import attncore as ac
from attncore import masks


def _z(*shape, dtype=np.float64):
    return np.zeros(shape, dtype)


def _shape(shape):
    """Regex for a shape as Python prints it: (3, 4)."""
    return re.escape(str(tuple(shape)))


def _attention_callers():
    """Every public function taking (q, k, v), as name -> f(q, k, v).

    The tests below give them 3-D arrays (one head) so that grouped_query_attention,
    which needs a head axis, sees the same arrays and must report the same shapes.
    """
    return {
        "attention": lambda q, k, v: ac.attention(q, k, v),
        "flash_attention": lambda q, k, v: ac.flash_attention(q, k, v),
        "grouped_query_attention": lambda q, k, v: ac.grouped_query_attention(q, k, v),
    }


CALLERS = _attention_callers()


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("name", CALLERS)
def test_q_and_k_with_different_d_k(name):
    with pytest.raises(ValueError, match=r"q and k must share d_k.*q has shape .*4\).*k has shape .*3\)"):
        CALLERS[name](_z(1, 3, 4), _z(1, 5, 3), _z(1, 5, 2))


def test_q_and_k_with_different_d_k_scores_and_weights():
    match = r"d_k.*q has shape \(3, 4\), k has shape \(5, 3\)"
    with pytest.raises(ValueError, match=match):
        ac.attention_scores(_z(3, 4), _z(5, 3))
    with pytest.raises(ValueError, match=match):
        ac.attention_weights(_z(3, 4), _z(5, 3))


def test_q_and_k_with_different_d_k_weights_from_lse():
    # weights_from_lse is public too: the mismatch must be reported in attncore's words,
    # naming q and k and their shapes, not as a NumPy matmul error
    with pytest.raises(ValueError, match=r"q.*\(5, 4\).*k.*\(5, 3\)"):
        ac.weights_from_lse(_z(5, 4), _z(5, 3), _z(5))


@pytest.mark.parametrize("name", CALLERS)
def test_k_and_v_with_different_t_k(name):
    with pytest.raises(ValueError, match=r"k and v must share T_k.*k has shape .*5, 4\).*v has shape .*6, 2\)"):
        CALLERS[name](_z(1, 3, 4), _z(1, 5, 4), _z(1, 6, 2))


def test_arrays_with_too_few_dimensions():
    with pytest.raises(ValueError, match=r"q must have shape \(\.\.\., T_q, d_k\), got shape \(4,\)"):
        ac.attention(_z(4), _z(5, 4), _z(5, 4))
    with pytest.raises(ValueError, match=r"v must have shape .*got shape \(5,\)"):
        ac.flash_attention(_z(3, 4), _z(5, 4), _z(5))


def test_gqa_needs_a_head_axis():
    with pytest.raises(ValueError, match=r"q must have shape \(\.\.\., H_q, T_q, d\), got shape \(3, 4\)"):
        ac.grouped_query_attention(_z(3, 4), _z(1, 5, 4), _z(1, 5, 4))


def test_leading_dimensions_that_do_not_broadcast():
    match = r"leading \(batch, head\) dimensions must broadcast.*q \(2, 3, 4\), k \(3, 5, 4\)"
    with pytest.raises(ValueError, match=match):
        ac.attention(_z(2, 3, 4), _z(3, 5, 4), _z(3, 5, 4))
    with pytest.raises(ValueError, match=match):
        ac.flash_attention(_z(2, 3, 4), _z(3, 5, 4), _z(3, 5, 4))
    with pytest.raises(ValueError, match=match):
        ac.attention_scores(_z(2, 3, 4), _z(3, 5, 4))


# --------------------------------------------------------------------------- masks given to attention


@pytest.mark.parametrize(
    "mask_shape,scores_shape", [((3, 4), (3, 5)), ((5, 3), (3, 5)), ((2, 3, 5), (3, 5)), ((4, 1, 5), (2, 3, 5))]
)
def test_mask_that_does_not_broadcast(mask_shape, scores_shape):
    q = _z(*scores_shape[:-2], scores_shape[-2], 4)
    k = v = _z(*scores_shape[:-2], scores_shape[-1], 4)
    match = rf"mask with shape {_shape(mask_shape)} does not broadcast to the scores, shape {_shape(scores_shape)}"
    with pytest.raises(ValueError, match=match):
        ac.attention(q, k, v, mask=np.ones(mask_shape, bool))
    with pytest.raises(ValueError, match=match):
        ac.softmax(_z(*scores_shape), mask=np.ones(mask_shape, bool))


def test_gqa_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"mask with shape \(3, 4\) does not broadcast"):
        ac.grouped_query_attention(_z(4, 3, 2), _z(2, 5, 2), _z(2, 5, 2), mask=np.ones((3, 4), bool))


@pytest.mark.parametrize(
    "mask", [np.ones((3, 5), np.int64), np.zeros((3, 5), np.float32), masks.to_additive(np.ones((3, 5), bool))],
    ids=["int", "float", "additive"],
)
def test_non_boolean_mask(mask):
    match = rf"mask must be a boolean array.*got dtype {mask.dtype} with shape \(3, 5\)"
    with pytest.raises(ValueError, match=match):
        ac.attention(_z(3, 4), _z(5, 4), _z(5, 4), mask=mask)
    with pytest.raises(ValueError, match=match):
        ac.attention_weights(_z(3, 4), _z(5, 4), mask=mask)
    with pytest.raises(ValueError, match=match):
        ac.softmax(_z(3, 5), mask=mask)
    with pytest.raises(ValueError, match=match):
        ac.logsumexp(_z(3, 5), mask=mask)
    with pytest.raises(ValueError, match=match):
        ac.grouped_query_attention(_z(1, 3, 4), _z(1, 5, 4), _z(1, 5, 4), mask=mask)


def test_to_additive_rejects_non_boolean():
    with pytest.raises(ValueError, match=r"mask must be boolean, got dtype int64 with shape \(2, 2\)"):
        masks.to_additive(np.ones((2, 2), np.int64))


# --------------------------------------------------------------------------- dtypes and values


@pytest.mark.parametrize("which", ["q", "k", "v"])
@pytest.mark.parametrize("int_dtype", [np.int64, np.int32, np.bool_])
def test_integer_inputs(which, int_dtype):
    arrays = {"q": _z(1, 3, 4), "k": _z(1, 5, 4), "v": _z(1, 5, 2)}
    arrays[which] = arrays[which].astype(int_dtype)
    shape = arrays[which].shape
    match = rf"{which} must be a floating-point array.*got dtype {np.dtype(int_dtype)} with shape {_shape(shape)}"
    for call in CALLERS.values():
        with pytest.raises(ValueError, match=match):
            call(**arrays)


@pytest.mark.parametrize(
    "fn", [ac.softmax, ac.log_softmax, ac.logsumexp, ac.softmax_one, ac.sparsemax, ac.hardmax],
    ids=lambda f: f.__name__,
)
def test_integer_scores(fn):
    with pytest.raises(ValueError, match=r"x must be a floating-point array.*got dtype int64 with shape \(2, 3\)"):
        fn(np.ones((2, 3), np.int64))


@pytest.mark.parametrize("which", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_in_q_k_v(which, bad):
    arrays = {"q": _z(1, 3, 4), "k": _z(1, 5, 4), "v": _z(1, 5, 2)}
    arrays[which] = arrays[which].copy()
    arrays[which][0, 2, 1] = bad
    shape = arrays[which].shape
    match = rf"{which} must be finite, got {re.escape(str(bad))} at index \(0, 2, 1\) \(array shape {_shape(shape)}\)"
    for call in CALLERS.values():
        with pytest.raises(ValueError, match=match):
            call(**arrays)


def test_nan_or_inf_in_scores():
    x = _z(2, 3)
    x[0, 1] = np.nan
    match = r"x must be (finite|finite or -inf), got nan at index \(0, 1\) \(array shape \(2, 3\)\)"
    for fn in (ac.softmax, ac.log_softmax, ac.logsumexp, ac.sparsemax, ac.hardmax, ac.softmax_one):
        with pytest.raises(ValueError, match=match):
            fn(x)
    x[0, 1] = np.inf  # +inf is never a valid score
    with pytest.raises(ValueError, match=r"x must be finite or -inf, got inf at index \(0, 1\)"):
        ac.softmax(x)


def test_bad_scale():
    for scale in (0, -1.0, np.nan, np.inf, "2"):
        with pytest.raises(ValueError, match=r"scale must be a positive finite number, got"):
            ac.attention(_z(3, 4), _z(5, 4), _z(5, 4), scale=scale)
        with pytest.raises(ValueError, match=r"scale must be a positive finite number"):
            ac.flash_attention(_z(3, 4), _z(5, 4), _z(5, 4), scale=scale)


# --------------------------------------------------------------------------- heads


def test_heads_that_do_not_divide():
    with pytest.raises(
        ValueError,
        match=r"kv heads \(axis -3 of k\) must divide the query heads.*"
        r"q has shape \(6, 3, 4\) \(H_q = 6\), k has shape \(4, 5, 4\) \(H_kv = 4\)",
    ):
        ac.grouped_query_attention(_z(6, 3, 4), _z(4, 5, 4), _z(4, 5, 4))
    with pytest.raises(ValueError, match=r"H_q = 8 and H_kv = 3"):
        ac.kv_head_map(8, 3)
    with pytest.raises(ValueError, match=r"n_kv_heads must be an integer >= 1, got 0"):
        ac.kv_head_map(8, 0)
    with pytest.raises(ValueError, match=r"n_kv_heads must be an integer >= 1, got 2.0"):
        ac.kv_head_map(8, 2.0)


def test_k_and_v_with_different_kv_heads():
    with pytest.raises(ValueError, match=r"same number of kv heads.*k has shape \(2, 5, 4\), v has shape \(1, 5, 4\)"):
        ac.grouped_query_attention(_z(4, 3, 4), _z(2, 5, 4), _z(1, 5, 4))


# --------------------------------------------------------------------------- flash


@pytest.mark.parametrize("arg", ["block_q", "block_k"])
@pytest.mark.parametrize("value", [0, -3])
def test_block_sizes_below_one(arg, value):
    with pytest.raises(ValueError, match=rf"{arg} must be an integer >= 1, got {value}"):
        ac.flash_attention(_z(3, 4), _z(5, 4), _z(5, 4), **{arg: value})


@pytest.mark.parametrize("value", [2.5, "4", True, None])
def test_block_sizes_that_are_not_integers(value):
    with pytest.raises(ValueError, match=rf"block_k must be an integer >= 1, got {re.escape(repr(value))}"):
        ac.flash_attention(_z(3, 4), _z(5, 4), _z(5, 4), block_k=value)


def test_causal_true_with_rectangular_shapes():
    with pytest.raises(ValueError, match=r"causal=True is ambiguous for T_q = 3 != T_k = 5"):
        ac.flash_attention(_z(3, 4), _z(5, 4), _z(5, 4), causal=True)
    with pytest.raises(ValueError, match=r"causal=True is ambiguous for T_q = 3 != T_k = 5"):
        ac.weights_from_lse(_z(3, 4), _z(5, 4), _z(3), causal=True)


@pytest.mark.parametrize("causal", ["top-left", "lower", 1, "bottom_right "])
def test_bad_causal_value(causal):
    with pytest.raises(ValueError, match=rf"causal must be True, False or one of .*got {re.escape(repr(causal))}"):
        ac.flash_attention(_z(3, 4), _z(5, 4), _z(5, 4), causal=causal)


def test_lse_with_the_wrong_shape():
    with pytest.raises(ValueError, match=r"lse must have shape \(\.\.\., T_q\) with T_q = 3 as q \(3, 4\), got \(4,\)"):
        ac.weights_from_lse(_z(3, 4), _z(5, 4), _z(4))
    with pytest.raises(ValueError, match=r"lse must be finite or -inf, got nan"):
        ac.weights_from_lse(_z(3, 4), _z(5, 4), np.full(3, np.nan))


def test_lse_and_q_k_with_batch_dimensions_that_do_not_broadcast():
    """Review 3.5.2: these were raw NumPy broadcast (or matmul) errors."""
    match = (r"lse with shape \(3, 3\) does not fit q \(2, 3, 4\) and k \(2, 5, 4\): .*"
             r"must broadcast with theirs, \(2,\); .* returns lse of shape \(2, 3\)")
    with pytest.raises(ValueError, match=match):
        ac.weights_from_lse(_z(2, 3, 4), _z(2, 5, 4), _z(3, 3))
    match = r"leading \(batch, head\) dimensions must broadcast, got q \(2, 3, 4\), k \(3, 5, 4\)"
    with pytest.raises(ValueError, match=match):
        ac.weights_from_lse(_z(2, 3, 4), _z(3, 5, 4), _z(2, 3))
    # lse broadcast over q and k (v had a batch axis they lack) still works
    assert ac.weights_from_lse(_z(3, 4), _z(5, 4), _z(2, 3)).shape == (2, 3, 5)


# --------------------------------------------------------------------------- mask constructors


def test_rectangular_causal_without_an_alignment():
    with pytest.raises(ValueError, match=r"causal mask of shape \(t_q, t_k\) = \(3, 5\) is ambiguous.*causal="):
        masks.causal(3, 5)
    with pytest.raises(ValueError, match=r"\(5, 3\) is ambiguous"):
        masks.causal(5, 3)


@pytest.mark.parametrize("alignment", ["top-left", "bottom", "", "BOTTOM_RIGHT"])
def test_bad_alignment(alignment):
    match = rf"causal must be True, False or one of \('top_left', 'bottom_right'\), got {re.escape(repr(alignment))}"
    with pytest.raises(ValueError, match=match):
        masks.causal(3, 5, causal=alignment)
    with pytest.raises(ValueError, match=r"causal must be True, False or one of"):
        masks.causal(4, causal=alignment)  # even when the square shape needs no alignment


def test_a_causal_mask_with_causal_false_is_refused():
    with pytest.raises(ValueError, match=r"causal=False asks masks.causal for no causal mask; pass True"):
        masks.causal(3, causal=False)


@pytest.mark.parametrize("lengths", [[1, 5], [-1, 2], [7]])
def test_key_padding_lengths_out_of_range(lengths):
    with pytest.raises(ValueError, match=rf"every length must lie in \[0, t_k=4\], got {re.escape(str(lengths))}"):
        masks.key_padding(np.array(lengths), 4)


@pytest.mark.parametrize(
    "lengths,desc",
    [(np.array([[1, 2], [3, 4]]), r"dtype int64 with shape \(2, 2\)"),
     (np.array([1.0, 2.0]), r"dtype float64 with shape \(2,\)"),
     (np.array(3), r"dtype int64 with shape \(\)")],
)
def test_key_padding_lengths_with_bad_shape_or_dtype(lengths, desc):
    with pytest.raises(ValueError, match=rf"lengths must be a 1-D integer array of shape \(B,\), got {desc}"):
        masks.key_padding(lengths, 4)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: masks.causal(0), r"t_q must be an integer >= 1, got 0"),
        (lambda: masks.causal(3, 0, causal="top_left"), r"t_k must be an integer >= 1, got 0"),
        (lambda: masks.causal(2.0), r"t_q must be an integer >= 1, got 2.0"),
        (lambda: masks.key_padding([1], 0), r"t_k must be an integer >= 1, got 0"),
        (lambda: masks.sliding_window(4, 0), r"window must be an integer >= 1, got 0"),
        (lambda: masks.sliding_window(0, 2), r"t must be an integer >= 1, got 0"),
        (lambda: masks.sink_window(4, -1, 2), r"n_sink must be an integer >= 0, got -1"),
        (lambda: masks.sink_window(4, 1, 0), r"window must be an integer >= 1, got 0"),
        (lambda: masks.block_diagonal(np.array([0.0, 1.0])),
         r"segment_ids must be an integer array .*got dtype float64 with shape \(2,\)"),
        (lambda: masks.block_diagonal(np.array(3)), r"segment_ids must be an integer array .*shape \(\)"),
    ],
)
def test_mask_constructor_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_empty_feature_axis_and_boolean_scale_are_refused():
    with pytest.raises(ValueError, match=r"need d_k >= 1 \(the last axis\), got q \(3, 0\), k \(5, 0\)"):
        ac.attention(_z(3, 0), _z(5, 0), _z(5, 2))
    with pytest.raises(ValueError, match=r"need d_k >= 1"):
        ac.flash_attention(_z(3, 0), _z(5, 0), _z(5, 2))
    with pytest.raises(ValueError, match=r"scale must be a positive finite number, got True"):
        ac.attention(_z(3, 4), _z(5, 4), _z(5, 4), scale=True)


# --------------------------------------------------------------------------- the front door


def test_overflowing_scores_name_q_and_k_not_x():
    """Review 3.5.1 / R0 row 24: finite q and k whose scores overflow were reported as
    "x must be finite" (x: the scores, an argument nobody passed). Every entry point that
    forms scores now says which query and key, in the caller's words."""
    q, k = _z(3, 4, dtype=np.float32), _z(5, 4, dtype=np.float32)
    q[2], k[1] = 1e30, 1e30
    match = r"^q and k are finite but their scores scale \* q k\^T overflow float32: the score of query 2 and key 1 "
    for call in (lambda: ac.attention_scores(q, k), lambda: ac.attention_weights(q, k),
                 lambda: ac.attention(q, k, k), lambda: ac.flash_attention(q, k, k, block_q=2, block_k=2),
                 lambda: ac.weights_from_lse(q, k, np.zeros(3, np.float32), rows=[2]),
                 lambda: ac.grouped_query_attention(q[None], k[None], k[None])):
        with pytest.raises(ValueError, match=match):
            call()
    # hidden by the mask, the same score plays no part
    allowed = np.ones((3, 5), bool)
    allowed[2, 1] = False
    assert np.isfinite(ac.attention(q, k, k, mask=allowed)).all()


def test_float16_scores_are_returned_in_float16_and_refused_past_its_range():
    """attention_scores returns the scores in the inputs' dtype, so a float16 score past
    65504 cannot be returned; attention_weights computes in float32 and returns float16."""
    q = np.full((2, 4), 200, np.float16)
    with pytest.raises(ValueError, match="overflow float16"):
        ac.attention_scores(q, q, scale=1.0)
    weights = ac.attention_weights(q, q, scale=1.0)
    assert weights.dtype == np.float16 and np.allclose(weights, 0.5)


def test_feature_map_must_be_a_function():
    with pytest.raises(ValueError, match=r"feature_map must be a function .*got None"):
        ac.linear_attention(_z(3, 4), _z(5, 4), _z(5, 2), None)


# --------------------------------------------------------------------------- review 2026-12-01, core items


def test_sparsemax_and_hardmax_name_a_bad_axis():
    """Review 3.5.4: sparsemax of a scalar said "source: axis -1 is out of bounds" (NumPy's
    moveaxis parameter), hardmax "axis -1 ... of dimension 0". Both now say what x and axis
    are; the error is an AxisError, which is a ValueError (and an IndexError, as NumPy's)."""
    for fn in (ac.sparsemax, ac.hardmax):
        with pytest.raises(np.exceptions.AxisError, match=r"^x must have an axis to normalise along \(axis=-1\), "
                                                          r"got a scalar; pass np\.atleast_1d\(x\)$"):
            fn(np.float64(1.0))
        with pytest.raises(ValueError, match=r"^axis must be an integer in \[-2, 2\) for x of shape \(2, 3\), got 3$"):
            fn(_z(2, 3), axis=3)
        with pytest.raises(ValueError, match=r"axis must be an integer .* got 1\.0$"):
            fn(_z(2, 3), axis=1.0)
    # a good axis, negative or not, is unchanged
    x = np.array([[1.0, 0.8], [0.1, 0.3]])
    np.testing.assert_array_equal(ac.sparsemax(x, axis=0), ac.sparsemax(x, axis=-2))
    np.testing.assert_array_equal(ac.hardmax(x, axis=np.int64(0)), [[1.0, 1.0], [0.0, 0.0]])


def test_convex_combination_shapes_must_fit():
    """Review 3.5.6: mismatched shapes gave a raw matmul gufunc or broadcasting error."""
    from attncore.invariants import check_convex_combination

    cases = [((4, 2), (4, 6), (5, 2)),  # T_k of weights and values differ
             ((4, 3), (4, 5), (5, 2)),  # d_v of output and values differ
             ((3, 2), (4, 5), (5, 2)),  # T_q of output and weights differ
             ((2,), (4, 5), (5, 2))]  # output without its query axis
    for out, w, v in cases:  # shapes
        match = (r"^output \(\.\.\., T_q, d_v\), weights \(\.\.\., T_q, T_k\) and values \(\.\.\., T_k, d_v\) must "
                 rf"fit together: got output {_shape(out)}, weights {_shape(w)}, values {_shape(v)}$")
        with pytest.raises(ValueError, match=match):
            check_convex_combination(_z(*out), np.full(w, 1 / w[-1]), _z(*v))
    with pytest.raises(ValueError, match=r"leading \(batch, head\) dimensions must broadcast, got output \(2, 4, 2\)"):
        check_convex_combination(_z(2, 4, 2), np.full((3, 4, 5), 0.2), _z(5, 2))


def test_scale_may_be_a_0d_array():
    """Review 3.5.11: np.float32(0.5) was accepted and np.array(0.5) refused; both are one number."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4, 5))
    expected = ac.attention(q, k, v, scale=0.5)
    for call in (ac.attention, ac.flash_attention):
        np.testing.assert_allclose(call(q, k, v, scale=np.array(0.5)), expected, rtol=1e-12, atol=1e-12)
    for bad in (np.array(-1.0), np.array(np.nan), np.array([0.5]), np.array(True)):
        with pytest.raises(ValueError, match=rf"^scale must be a positive finite number, got {re.escape(repr(bad))}$"):
            ac.attention(q, k, v, scale=bad)


# --------------------------------------------------------------------------- the old argument forms

OLD_FORMS = {  # the old call, the new one: the same result, with a DeprecationWarning naming the new form
    "attention": (lambda q, k, v, m: ac.attention(q, k, v, m, 0.5),
                  lambda q, k, v, m: ac.attention(q, k, v, mask=m, scale=0.5), r"pass mask=\.\.\., scale=\.\.\."),
    "attention with weights": (lambda q, k, v, m: ac.attention(q, k, v, m, None, True)[1],
                               lambda q, k, v, m: ac.attention(q, k, v, mask=m, return_weights=True)[1],
                               r"pass mask=\.\.\., scale=\.\.\., return_weights=\.\.\."),
    "attention_weights": (lambda q, k, v, m: ac.attention_weights(q, k, m),
                          lambda q, k, v, m: ac.attention_weights(q, k, mask=m), r"pass mask=\.\.\. by keyword"),
    "attention_scores": (lambda q, k, v, m: ac.attention_scores(q, k, 2.0),
                         lambda q, k, v, m: ac.attention_scores(q, k, scale=2.0), r"pass scale=\.\.\."),
    "grouped_query_attention": (lambda q, k, v, m: ac.grouped_query_attention(q[None], k[None], v[None], m),
                                lambda q, k, v, m: ac.grouped_query_attention(q[None], k[None], v[None], mask=m),
                                r"pass mask=\.\.\."),
    "softmax": (lambda q, k, v, m: ac.softmax(q, 0), lambda q, k, v, m: ac.softmax(q, axis=0), r"pass axis=\.\.\."),
    "logsumexp": (lambda q, k, v, m: ac.logsumexp(q, -1, None, True),
                  lambda q, k, v, m: ac.logsumexp(q, keepdims=True), r"axis=\.\.\., mask=\.\.\., keepdims=\.\.\."),
    "masks.causal": (lambda q, k, v, m: masks.causal(3, 4, align="bottom_right"),
                     lambda q, k, v, m: masks.causal(3, 4, causal="bottom_right"), r"align= is now called causal="),
}


@pytest.mark.parametrize("name", OLD_FORMS)
def test_the_old_argument_forms_work_for_a_release_with_a_deprecation_warning(name):
    """Positional mask, scale, axis... and masks.causal's align= give the new form's result, and a
    DeprecationWarning that names the function and the new form, pointing at the caller's line."""
    old, new, says = OLD_FORMS[name]
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 3, 4))
    mask = masks.causal(3)
    with pytest.warns(DeprecationWarning, match=says) as caught:
        got = old(q, k, v, mask)
    assert all(warning.filename == __file__ for warning in caught)
    np.testing.assert_array_equal(got, new(q, k, v, mask))


def test_the_old_positional_forms_refuse_too_many_or_twice():
    q = np.ones((2, 3))
    with pytest.raises(TypeError, match=r"^attncore\.softmax\(\) takes 2 old positional arguments at most"):
        ac.softmax(q, -1, None, 0)
    with pytest.raises(TypeError, match=r"^attncore\.attention\(\) got mask twice: by position and as mask="):
        ac.attention(q, q, q, np.ones((2, 2), bool), mask=np.ones((2, 2), bool))
    with pytest.raises(ValueError, match=r"causal must be True, False or one of"), pytest.warns(DeprecationWarning):
        masks.causal(3, 4, align="top-left")  # the old name keeps the new checks
