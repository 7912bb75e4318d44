"""The contract of every implementation of attention: same result, or the same error.

The implementations: attncore.attention (a causal mask passed as `mask`),
grouped_query_attention with repeated heads, attncore.flash_attention (NumPy tiles),
attncore.jit.flash_attention on every micro-kernel path (all of them run on any CPU:
LLVM lowers wider vectors to what the CPU has) and attncore.jit.decode_attention (query heads
sharing a kv head). What they all promise:

- the weights softmax(scale q k^T) over the allowed keys, to a tolerance justified in
  `_tolerance`, with broadcast leading dimensions, both causal alignments, any T_k >= 0;
- values anywhere in range: v near the largest float gives a finite output (a convex
  combination of the rows of v), never inf;
- a row with no allowed key (T_k = 0, or bottom_right with T_q > T_k) has output 0 and
  log-sum-exp -inf, never NaN;
- float16 in gives float16 out, computed in float32 (scores past float16's range are fine);
- scores that overflow the compute dtype although q and k are finite raise ValueError
  naming q and k and the query and key, never NaN (NumPy tiles) or a silent zero row
  (the kernel) -- unless the key is hidden from that query: a hidden score plays no part;
- NaN or inf in q, k or v raises ValueError naming the argument;
- causal=True with T_q != T_k is refused as ambiguous.
"""
import inspect

import numpy as np
import pytest

import attncore as ac
from attncore import masks

from . import reference as ref

pytestmark = pytest.mark.xdist_group("numba-flash")  # one worker compiles each kernel once (conftest.py)

try:
    from attncore import jit
except ImportError:  # the contract of the NumPy implementations holds without Numba
    jit = None


def _mask(causal, t_q, t_k):
    """The boolean mask that `causal` stands for, for the implementations that take masks.
    masks.causal needs t_q, t_k >= 1 (and refuses True for t_q != t_k); the empty mask of
    a side of length 0 is built here, from the DESIGN's rule j <= i + offset."""
    if causal is False:
        return None
    if t_q and t_k:
        return masks.causal(t_q, t_k, causal=causal)
    if causal is True and t_q != t_k:
        pytest.skip("masks.causal refuses empty sides; the ambiguity is tested with t >= 1")
    offset = t_k - t_q if causal == "bottom_right" else 0
    return np.arange(t_k)[None, :] <= np.arange(t_q)[:, None] + offset


def _attention(q, k, v, causal, scale):
    return ac.attention(q, k, v, mask=_mask(causal, q.shape[-2], k.shape[-2]), scale=scale), None


def _grouped(q, k, v, causal, scale):
    """Two query heads over one kv head, both the given q: each must equal attention."""
    mask = _mask(causal, q.shape[-2], k.shape[-2])
    q2 = np.stack([q, q], axis=-3)  # (..., 2, T_q, d)
    out = ac.grouped_query_attention(q2, k[..., None, :, :], v[..., None, :, :], mask=mask, scale=scale)
    np.testing.assert_array_equal(out[..., 0, :, :], out[..., 1, :, :])
    return out[..., 0, :, :], None


def _flash(q, k, v, causal, scale):
    return ac.flash_attention(q, k, v, causal=causal, scale=scale, block_q=3, block_k=2, return_lse=True)


def _jit(path):
    def run(q, k, v, causal, scale):
        return jit.flash_attention(q, k, v, causal=causal, scale=scale, block_k=5, return_lse=True, path=path)

    return run


def _jit_decode(q, k, v, causal, scale):
    """jit.decode_attention, two query heads over one kv head (as _grouped): each must equal attention."""
    q2 = np.stack([q, q], axis=-3)
    out, lse = jit.decode_attention(q2, k[..., None, :, :], v[..., None, :, :], causal=causal, scale=scale,
                                    enable_gqa=True, block_k=5, return_lse=True)
    np.testing.assert_array_equal(out[..., 0, :, :], out[..., 1, :, :])
    return out[..., 0, :, :], lse[..., 0, :]


IMPLEMENTATIONS = {"attention": _attention, "grouped_query_attention": _grouped, "flash_attention": _flash}
for _path in sorted(jit.PATHS) if jit is not None else ():
    IMPLEMENTATIONS[f"jit-{_path}"] = _jit(_path)
if jit is not None:
    IMPLEMENTATIONS["jit-decode"] = _jit_decode
NAMES = sorted(IMPLEMENTATIONS)


def reference(q, k, v, causal, scale=None):
    """The definition, in float64: weights over the allowed keys, 0 for a row with none;
    and the log-sum-exp of each row (-inf for a row with none)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    t_q, t_k = q.shape[-2], k.shape[-2]
    s = (q @ np.swapaxes(k, -1, -2)) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    mask = _mask(causal, t_q, t_k)
    s = np.where(True if mask is None else mask, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
    e = np.exp(s - np.where(np.isneginf(m), 0, m))
    total = e.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = (np.where(np.isneginf(m), 0, m) + np.log(total))[..., 0]
    return (e / np.where(total == 0, 1, total)) @ v, lse, s


def _tolerance(dtype, s, v):
    """Each implementation computes in float32 (float16, float32 in) or float64 and sums in
    its own order (tiles, the kernel's log2 units and exp2 polynomial): a score is off by a
    few eps (1 + max|s|), a weight by that relative amount, the output (a convex combination
    of the rows of v) by that times max|v|; 16 such units, as tests/test_jit.py allows. A
    float16 result adds its own rounding, eps16 / 2 of |out| <= max|v|."""
    work = np.float64 if dtype == np.float64 else np.float32
    top = np.abs(s[np.isfinite(s)]).max(initial=0)
    unit = 16 * np.finfo(work).eps * (1 + top)
    v_max = np.abs(v).max(initial=0)
    out_tol = unit * v_max + (np.finfo(dtype).eps / 2 * v_max if dtype == np.float16 else 0)
    lse_tol = unit + (np.finfo(dtype).eps / 2 * (1 + top) if dtype == np.float16 else 0)
    return out_tol, lse_tol


def _check(name, q, k, v, causal, scale=None):
    out, lse = IMPLEMENTATIONS[name](q, k, v, causal, scale)
    ref_out, ref_lse, s = reference(q, k, v, causal, scale)
    dtype = np.result_type(q, k, v)
    assert out.dtype == dtype and out.shape == ref_out.shape
    out_tol, lse_tol = _tolerance(dtype, s, v)
    np.testing.assert_allclose(out.astype(np.float64), ref_out, rtol=0, atol=out_tol)
    empty = np.isneginf(ref_lse)
    assert np.all(out[empty] == 0)  # a row with no allowed key: exactly 0, never NaN
    if lse is not None:
        assert lse.dtype == dtype and lse.shape == ref_lse.shape
        np.testing.assert_array_equal(np.isneginf(lse), empty)
        np.testing.assert_allclose(lse[~empty].astype(np.float64), ref_lse[~empty], rtol=0, atol=lse_tol)
    return out


def _random(shapes, dtype=np.float32, sigma=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, sigma, shape).astype(dtype) for shape in shapes]


CAUSAL = [False, True, "top_left", "bottom_right"]
# (T_q, T_k): square, fewer queries than keys (decoding), more (bottom_right leaves the first
# T_q - T_k rows with no key)
SIZES = [(7, 7), (3, 11), (11, 4)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_same_result_for_every_causal_alignment(name, dtype):
    for t_q, t_k in SIZES:
        q, k, v = _random([(2, t_q, 8), (2, t_k, 8), (2, t_k, 5)], dtype, seed=t_q)
        for causal in CAUSAL:
            if causal is True and t_q != t_k:
                continue
            _check(name, q, k, v, causal)


@pytest.mark.parametrize("name", NAMES)
def test_rows_with_no_key_are_zero_with_lse_minus_inf(name):
    q, k, v = _random([(2, 11, 4), (2, 4, 4), (2, 4, 3)])
    out = _check(name, q, k, v, "bottom_right")
    assert np.all(out[:, :7] == 0) and np.all(np.abs(out[:, 7:]).max(axis=-1) > 0)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("causal", [False, "top_left", "bottom_right"])
@pytest.mark.parametrize("t_q", [0, 3])
def test_no_keys_at_all(name, causal, t_q):
    """T_k = 0: every row has no key, so the output is (..., T_q, d_v) of zeros."""
    q, k, v = _random([(2, t_q, 4), (2, 0, 4), (2, 0, 3)])
    out = _check(name, q, k, v, causal)
    assert out.shape == (2, t_q, 3)


@pytest.mark.parametrize("name", NAMES)
def test_broadcast_leading_dimensions(name):
    """q (2, 3, ...), k (1, 3, ...), v (2, 1, ...) and (3,) against () and (1,): the result is
    that of the arrays broadcast to (2, 3, ...) explicitly."""
    q, k, v = _random([(2, 3, 6, 4), (1, 3, 9, 4), (2, 1, 9, 3)], seed=5)
    out = _check(name, q, k, v, "bottom_right")
    batch = (2, 3)
    explicit = [np.broadcast_to(x, (*batch, *x.shape[-2:])).copy() for x in (q, k, v)]
    np.testing.assert_allclose(out, _check(name, *explicit, "bottom_right"), rtol=0, atol=1e-6)
    q, k, v = _random([(3, 5, 4), (5, 4), (1, 5, 2)], seed=6)
    assert _check(name, q, k, v, True).shape == (3, 5, 2)


@pytest.mark.parametrize("name", NAMES)
def test_large_scores_that_fit_are_exact(name):
    """Scores around 1e4 (exp of them overflows, the max-shifted form does not)."""
    q, k, v = _random([(2, 6, 8), (2, 9, 8), (2, 9, 3)], sigma=20.0, seed=2)
    _check(name, q, k, v, False, scale=1.0)


@pytest.mark.parametrize("name", NAMES)
def test_float16_scores_past_its_range_are_computed_in_float32(name):
    """float16 entries around 300 give products q . k far past 65504, the float16 maximum, and
    scale 1e-3 brings the scores back to a few hundred: computed in float32 (as fused kernels
    accumulate), returned in float16."""
    q, k, v = _random([(2, 5, 8), (2, 6, 8), (2, 6, 4)], np.float16, sigma=300.0, seed=3)
    assert np.abs(q.astype(np.float32) @ np.swapaxes(k, -1, -2).astype(np.float32)).max() > 65504
    out = _check(name, q, k, v, False, scale=1e-3)
    assert out.dtype == np.float16 and np.isfinite(out).all()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype, top", [(np.float32, 3e38), (np.float64, 1e308)])
def test_values_near_the_top_of_the_range(name, dtype, top):
    """v near the largest float: the output is a convex combination of the rows of v, so
    finite. attention normalises before it sums; the flash implementations sum up to T_k
    unnormalised rows first, so they divide v by a power of two (exactly) and multiply back,
    rather than return inf."""
    q, k = _random([(2, 5, 4), (2, 9, 4)], dtype, seed=8)
    v = np.full((2, 9, 3), top, dtype)
    v[:, ::2] *= -0.5
    out = _check(name, q, k, v, "bottom_right")
    assert np.isfinite(out).all()


OVERFLOWS = {
    "positive": (1e30, 1e30),  # the score is +inf
    "negative": (1e30, -1e30),  # -inf: it would look like a masked key
    "mixed": (1e30, None),  # +inf - inf within the dot product: NaN
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", OVERFLOWS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_overflowing_scores_raise_naming_q_and_k(name, kind, dtype):
    """One score, of query 4 and key 2, overflows (float32: 1e30 * 1e30; float64: 1e200 * 1e200):
    every implementation raises the same error, naming q and k, the query and the key."""
    big = 1e30 if dtype == np.float32 else 1e200
    q, k, v = _random([(2, 6, 4), (2, 7, 4), (2, 7, 3)], dtype, seed=4)
    a, b = OVERFLOWS[kind]
    q[1, 4] = big
    k[1, 2] = big * b / a if b is not None else np.array([big, -big, big, -big])
    match = (rf"^q and k are finite but their scores scale \* q k\^T overflow {np.dtype(dtype)}: "
             r"the score of query 4 and key 2 ")
    for causal in (False, "bottom_right"):
        with pytest.raises(ValueError, match=match):
            IMPLEMENTATIONS[name](q, k, v, causal, None)


@pytest.mark.parametrize("name", NAMES)
def test_an_overflow_hidden_by_the_causal_mask_plays_no_part(name):
    """Query 1 never sees key 5 (causal): its overflowing score is no error, and the result
    is the definition's."""
    q, k, v = _random([(1, 7, 4), (1, 7, 4), (1, 7, 3)], seed=9)
    q[0, 1], k[0, 5] = 1e30, 1e30
    _check(name, q, k, v, True)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("argument", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_in_an_input_names_it(name, argument, bad):
    arrays = dict(zip("qkv", _random([(2, 5, 4), (2, 6, 4), (2, 6, 3)])))
    arrays[argument][1, 2, 0] = bad
    with pytest.raises(ValueError, match=rf"^{argument} must be finite, got {bad}"):
        IMPLEMENTATIONS[name](arrays["q"], arrays["k"], arrays["v"], False, None)


@pytest.mark.parametrize("name", NAMES)
def test_causal_true_with_rectangular_shapes_is_ambiguous(name):
    q, k, v = _random([(3, 4), (5, 4), (5, 2)])
    with pytest.raises(ValueError, match="is ambiguous for T_q = 3 != T_k = 5"):
        IMPLEMENTATIONS[name](q, k, v, True, None)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_grouped_query_attention_is_attention_with_repeated_kv_heads(dtype):
    """Four query heads over two kv heads: query head h reads kv head h // 2, so it equals
    attention with k and v repeated (np.repeat, not np.tile) to four heads, weights included."""
    q, k, v = _random([(2, 4, 6, 8), (2, 2, 9, 8), (2, 2, 9, 3)], dtype, seed=7)
    mask = masks.causal(6, 9, causal="bottom_right")
    out, weights = ac.grouped_query_attention(q, k, v, mask=mask, return_weights=True)
    want, want_weights = ac.attention(q, np.repeat(k, 2, axis=-3), np.repeat(v, 2, axis=-3), mask=mask,
                                      return_weights=True)
    assert out.dtype == weights.dtype == dtype
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(weights, want_weights)


# --------------------------------------------------------------------------- one keyword tail

TAIL = {"mask": None, "causal": False, "window": None, "scale": None, "enable_gqa": False}
# every attention entry point: its leading (positional) arguments, and what of TAIL it refuses
ENTRY_POINTS = {
    "attention": (ac.attention, ("q", "k", "v"), set()),
    "attention_weights": (ac.attention_weights, ("q", "k"), set()),
    "flash_attention": (ac.flash_attention, ("q", "k", "v"), set()),
    "weights_from_lse": (ac.weights_from_lse, ("q", "k", "lse", "rows"), set()),
}
if jit is not None:
    ENTRY_POINTS["jit.flash_attention"] = (jit.flash_attention, ("q", "k", "v"), {"mask", "window"})
    ENTRY_POINTS["jit.decode_attention"] = (jit.decode_attention, ("q", "k", "v"), {"mask", "window"})
OUTPUTS = [name for name, (_, leading, _) in ENTRY_POINTS.items() if leading == ("q", "k", "v")]


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_entry_point_takes_the_same_keyword_tail(name):
    """After its leading arguments, every attention entry point takes mask, causal, window, scale
    and enable_gqa, keyword-only and with the same defaults (then what it alone takes: block
    sizes, return_lse, path, precision). softmax and jit.softmax take axis and mask alike."""
    function, leading, _ = ENTRY_POINTS[name]
    parameters = inspect.signature(function).parameters.values()
    positional = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywords = {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}
    assert tuple(positional) == leading
    assert {key: keywords.get(key, "missing") for key in TAIL} == TAIL
    softmaxes = [ac.softmax] + ([jit.softmax] if jit is not None else [])
    for softmax in softmaxes:
        keywords = {p.name: p.default for p in inspect.signature(softmax).parameters.values()
                    if p.kind is p.KEYWORD_ONLY}
        assert (keywords["axis"], keywords["mask"]) == (-1, None)
    assert inspect.signature(masks.causal).parameters["causal"].kind is inspect.Parameter.KEYWORD_ONLY


def _allowed(t_q, t_k, mask=None, causal=False, window=None):
    """The keys each query may see, as plain lists: mask, causal offset and window by the DESIGN's rule
    (query i sees key j when j <= i + offset, and with a window when j > i + offset - window)."""
    offset = None if causal is False else (t_k - t_q if causal == "bottom_right" else 0)
    return [[(mask is None or bool(mask[i][j])) and (offset is None or j <= i + offset)
             and (window is None or j > i + offset - window) for j in range(t_k)] for i in range(t_q)]


def _loops(q, k, v, mask=None, causal=False, window=None, scale=None, enable_gqa=False):
    """The plain-loop reference (tests/reference.py) over (B, H_q, T_q, d) and (B, H_kv, T_k, d), query head h
    reading kv head h // (H_q // H_kv) (enable_gqa; without it H_kv = H_q); mask (B, H_q, T_q, T_k) or None."""
    out = np.zeros((*q.shape[:-1], v.shape[-1]))
    group = q.shape[1] // k.shape[1]
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            allowed = _allowed(q.shape[2], k.shape[2], None if mask is None else mask[b, h], causal, window)
            out[b, h] = ref.attention(q[b, h], k[b, h // group], v[b, h // group], allowed, scale)[0]
    return out


TAIL_CASES = {  # keyword tails, each tried on every entry point that returns an output
    "mask": dict(mask=True),
    "causal and a window": dict(causal="bottom_right", window=3),
    "mask, causal and a window": dict(mask=True, causal="top_left", window=2),
    "grouped heads": dict(enable_gqa=True, causal="bottom_right"),
    "grouped heads and a mask": dict(enable_gqa=True, mask=True, scale=0.3),
    "scale": dict(scale=0.3, causal=True),
}


@pytest.mark.parametrize("name", OUTPUTS)
@pytest.mark.parametrize("case", TAIL_CASES)
def test_every_entry_point_gives_the_plain_loops_result_or_refuses_by_name(name, case):
    """Each keyword tail gives the plain-loop reference's output on every entry point that takes all
    of it, and a ValueError naming the argument and what takes it on one that does not (never a
    silent guess). The mask hides every key of one query: its output is 0."""
    function, _, refused = ENTRY_POINTS[name]
    tail = dict(TAIL_CASES[case])
    h_kv = 2 if tail.get("enable_gqa") else 4
    t_q, t_k = (7, 7) if tail.get("causal") is True else (5, 8)
    q, k, v = _random([(2, 4, t_q, 4), (2, h_kv, t_k, 4), (2, h_kv, t_k, 3)], np.float64, seed=len(case))
    if tail.get("mask"):
        tail["mask"] = np.random.default_rng(1).random((2, 4, t_q, t_k)) < 0.7
        tail["mask"][1, 2, 0] = False
    if refused & tail.keys():
        first = sorted(refused & tail.keys())[0]
        with pytest.raises(ValueError, match=rf"takes no {first} .*attncore\.flash_attention"):
            function(q, k, v, **tail)
        return
    out = function(q, k, v, **tail)
    assert out.shape == q.shape[:-1] + (3,)
    np.testing.assert_allclose(out, _loops(q, k, v, **tail), rtol=0, atol=1e-12)
    if "mask" in tail:
        assert np.all(out[1, 2, 0] == 0)


BAD_INPUTS = {  # (q, k, v shapes), enable_gqa -> the one error every entry point raises
    "batch mismatch": (((4, 5, 4), (2, 7, 4), (2, 7, 3)), False,
                       r"the leading \(batch, head\) dimensions must broadcast, got q \(4, 5, 4\), k \(2, 7, 4\), "
                       r"v \(2, 7, 3\)"),
    "no kv heads, not grouped": (((4, 5, 4), (0, 7, 4), (0, 7, 3)), False,
                                 r"the leading \(batch, head\) dimensions must broadcast, got q \(4, 5, 4\), k \(0, 7"),
    "no kv heads": (((4, 5, 4), (0, 7, 4), (0, 7, 3)), True,
                    r"k must have at least one kv head \(axis -3 of k\) for grouped-query attention: q has shape "
                    r"\(4, 5, 4\) \(H_q = 4\), k has shape \(0, 7, 4\) \(H_kv = 0\)"),
    "no heads at all": (((0, 5, 4), (0, 7, 4), (0, 7, 3)), True, r"k must have at least one kv head"),
    "kv heads that do not divide": (((1, 6, 5, 4), (1, 4, 7, 4), (1, 4, 7, 3)), True,
                                    r"the kv heads \(axis -3 of k\) must divide the query heads \(axis -3 of q\): "
                                    r"q has shape \(1, 6, 5, 4\) \(H_q = 6\), k has shape \(1, 4, 7, 4\) \(H_kv = 4\)"),
    "empty leading axis against two": (((0, 4, 5, 4), (2, 2, 7, 4), (2, 2, 7, 3)), True,
                                       r"the leading \(batch\) dimensions before the heads must broadcast, got "
                                       r"q \(0, 4, 5, 4\), k \(2, 2, 7, 4\), v \(2, 2, 7, 3\)"),
    "grouped without a head axis": (((5, 4), (7, 4), (7, 3)), True, r"q must have shape \(\.\.\., H_q, T_q, d\), got "
                                                                   r"shape \(5, 4\)"),
}


@pytest.mark.parametrize("name", OUTPUTS)
@pytest.mark.parametrize("case", BAD_INPUTS)
def test_the_same_bad_inputs_raise_the_same_named_error_everywhere(name, case):
    """A batch mismatch is refused, not read as grouped heads; no kv heads or an empty leading axis
    that does not broadcast are a ValueError naming the arguments and their shapes (never a
    ZeroDivisionError), the same message from every entry point."""
    shapes, enable_gqa, match = BAD_INPUTS[case]
    function = ENTRY_POINTS[name][0]
    q, k, v = (np.ones(shape, np.float32) for shape in shapes)
    with pytest.raises(ValueError, match=f"^{match}"):
        function(q, k, v, enable_gqa=enable_gqa)


@pytest.mark.parametrize("name", OUTPUTS)
@pytest.mark.parametrize("enable_gqa", [False, True])
def test_empty_leading_axes_that_broadcast_give_empty_results(name, enable_gqa):
    """No batch entries, or no query heads over one kv head: an empty result of the right shape."""
    function = ENTRY_POINTS[name][0]
    for shapes in [((0, 3, 5, 4), (0, 3, 7, 4), (1, 3, 7, 2)), ((2, 0, 5, 4), (2, 1, 7, 4), (2, 1, 7, 2))]:
        q, k, v = _random(shapes)
        assert function(q, k, v, enable_gqa=enable_gqa).shape == shapes[0][:-1] + (2,)
