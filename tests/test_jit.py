"""attncore.jit: every micro-kernel path agrees with a float64 reference, and the cache works.

All paths run on any CPU (LLVM lowers wider vectors to what the CPU has), so every
path is tested here whatever the machine."""
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import numba  # noqa: E402

import attncore  # noqa: E402
from attncore import jit, masks  # noqa: E402
from attncore._checks import causal_offset  # noqa: E402

pytestmark = pytest.mark.xdist_group("numba-flash")  # one worker compiles each kernel once (conftest.py)

DTYPES = [np.float32, np.float64]
PATHS = sorted(jit.PATHS)
CAUSAL = [False, True, "top_left", "bottom_right"]
# leading dims of (q, k, v): none, batch, and heads broadcast from size 1 or absent
LEADING = [((), (), ()), ((2,), (2,), (2,)), ((2, 3), (1, 3), (2, 1)), ((3,), (), (1,))]


def reference(q, k, v, causal, scale=None):
    """attncore.attention computed in float64 with the matching causal mask, and the
    log-sum-exp of its scores."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    t_q, t_k = q.shape[-2], k.shape[-2]
    mask = None if causal is False else masks.causal(t_q, t_k, causal=causal)
    scores = attncore.attention_scores(q, k, scale=scale)
    return attncore.attention(q, k, v, mask=mask, scale=scale), attncore.logsumexp(scores, mask=mask), scores


def assert_matches(q, k, v, causal, **kwargs):
    """Tolerance, in eps of the input dtype: the kernel folds scale * log2(e) into q and
    sums d_k products in another order, so a score differs by a few eps * (1 + max|s|);
    a weight 2^(s - m) then by that relative amount plus the exp2 polynomial's (below
    2 eps), and the output (a convex combination of the v rows) by that times max|v|.
    The lse adds the rounding of log(l). 16 of these units leaves room without hiding
    a wrong mask or a lost tile (errors O(1)).
    """
    out, lse = jit.flash_attention(q, k, v, causal=causal, return_lse=True, **kwargs)
    ref_out, ref_lse, scores = reference(q, k, v, causal, kwargs.get("scale"))
    assert out.dtype == q.dtype and out.shape == ref_out.shape and lse.shape == ref_lse.shape
    unit = 16 * np.finfo(out.dtype).eps * (1 + np.abs(scores).max(initial=0))
    np.testing.assert_allclose(out, ref_out, rtol=0, atol=unit * np.abs(v).max(initial=0))
    np.testing.assert_array_equal(np.isneginf(lse), np.isneginf(ref_lse))
    seen = np.isfinite(ref_lse)
    np.testing.assert_allclose(lse[seen], ref_lse[seen], rtol=0, atol=unit)


@settings(max_examples=60, deadline=None)
@given(
    path=st.sampled_from(PATHS),
    dtype=st.sampled_from(DTYPES),
    causal=st.sampled_from(CAUSAL),
    leading=st.sampled_from(LEADING),
    t_q=st.integers(1, 70),
    t_k=st.integers(1, 70),
    d=st.integers(1, 9),
    d_v=st.integers(1, 9),
    block_q=st.none() | st.integers(1, 80),
    block_k=st.integers(1, 80),
    sigma=st.sampled_from([0.1, 1.0, 4.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_matches_attention(path, dtype, causal, leading, t_q, t_k, d, d_v, block_q, block_k, sigma, seed):
    t_k = t_q if causal is True else t_k
    rng = np.random.default_rng(seed)
    shapes = [(*leading[0], t_q, d), (*leading[1], t_k, d), (*leading[2], t_k, d_v)]
    q, k, v = (rng.normal(0, sigma, shape).astype(dtype) for shape in shapes)
    assert_matches(q, k, v, causal, block_q=block_q, block_k=block_k, path=path)


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_defaults_scale_and_long_sequences(path, dtype):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 600, 64)).astype(dtype) for _ in range(3))
    for causal in (False, True, "top_left"):
        assert_matches(q, k, v, causal, path=path)
    assert_matches(q, k[:, :333], v[:, :333], "bottom_right", scale=0.3, block_q=100, block_k=7, path=path)
    assert_matches(q, k[:, :333], v[:, :333], "top_left", block_q=100, block_k=7, path=path)
    assert_matches(q[:, :333], k, v, "bottom_right", path=path)


@pytest.mark.parametrize("path", PATHS)
def test_float32_error_against_float64(path):
    """The largest error against float64 at N = 1024, d = 64 (the harness measures the same):
    a few float32 eps, whatever the path and mask."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 1024, 64), dtype=np.float32) for _ in range(3))
    for causal in (False, True):
        error = np.abs(jit.flash_attention(q, k, v, causal=causal, path=path) - reference(q, k, v, causal)[0]).max()
        assert error < 2e-6


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tiny_weights_are_accurate_or_zero(path, dtype):
    """Two keys with scores 0 and -x: the weight of the second, e^-x / (1 + e^-x), stays within a
    few eps of exact down to the bottom of the normal range, and below it is 0 or tiny, never NaN.
    This is the kernel's vector 2^x (vscalefps on AVX-512, exponent bits elsewhere) at its ends."""
    info = np.finfo(dtype)
    normal = np.arange(450) < 400
    x = np.concatenate([np.linspace(0, -np.log(info.tiny) - 1, 400), np.linspace(-np.log(info.tiny) + 1, 2000, 50)])
    q = np.ones((x.size, 1, 1), dtype)
    k = np.stack([np.zeros_like(x), -x], axis=-1)[..., None].astype(dtype)
    v = np.broadcast_to(np.array([[0.0], [1.0]], dtype), (x.size, 2, 1))
    exact = np.exp(-x) / (1 + np.exp(-x))
    out = jit.flash_attention(q, k, v, scale=1.0, path=path)[:, 0, 0].astype(np.float64)
    relative = np.abs(out[normal] / exact[normal] - 1)
    assert np.all(relative <= 8 * info.eps * (1 + x[normal])), relative.max()  # the score -x is rounded
    assert np.all((out[~normal] >= 0) & (out[~normal] <= 2 * info.tiny))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_no_weight_is_denormal(path, dtype):
    """Across the bottom of the normal range a weight is a normal number or exactly 0: a
    denormal weight would reach the products, where x86 handles it in microcode (with
    vscalefps unmasked, N = 2048 ran 8 times slower with 0.7% of the weights denormal, 80 times
    with 13%)."""
    info = np.finfo(dtype)
    x = np.linspace(-np.log(info.tiny) - 3, -np.log(info.tiny) + 12, 4001)  # e^-x from 20 tiny to tiny / 10^5
    q = np.ones((x.size, 1, 1), dtype)
    k = np.stack([np.zeros_like(x), -x], axis=-1)[..., None].astype(dtype)
    v = np.broadcast_to(np.array([[0.0], [1.0]], dtype), (x.size, 2, 1))
    out = jit.flash_attention(q, k, v, scale=1.0, path=path)[:, 0, 0]
    assert np.all((out == 0) | (out >= info.tiny))
    assert (out == 0).any() and (out > 0).any()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_running_max_follows_scores_that_rise_within_and_across_tiles(path, dtype):
    """On a tile with no masked score the S product takes the running max: scores that rise from
    key to key (by 100 per tile) and a spike in the last row of a tile must all reach it, or
    2^(s - m) overflows. Causal, the diagonal tiles take the other route, after the mask."""
    t_k = 3 * jit.BLOCK_K + 40
    scores = np.arange(t_k) * (100 / jit.BLOCK_K)
    scores[2 * jit.BLOCK_K - 1] += 150
    q = np.ones((1, 50, 1), dtype)
    k = scores.astype(dtype)[None, :, None]
    v = np.random.default_rng(1).standard_normal((1, t_k, 3)).astype(dtype)
    for causal in (False, "bottom_right"):
        assert_matches(q, k, v, causal, scale=1.0, path=path)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_task_queue_gives_the_same_bits_on_any_number_of_threads(threads):
    """Tasks come from a shared counter; whichever thread runs a block computes it the same way."""
    import numba

    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((3, 2, 500, 16), dtype=np.float32) for _ in range(3))
    expected = {causal: jit.flash_attention(q, k, v, causal=causal, block_q=48) for causal in (False, True)}
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for causal in (False, True):
            for _ in range(3):
                np.testing.assert_array_equal(jit.flash_attention(q, k, v, causal=causal, block_q=48), expected[causal])
    finally:
        numba.set_num_threads(before)


def test_queue_time_is_list_scheduling():
    """queue_time against a hand count: each task goes to the thread that is free first."""
    assert jit.queue_time([4, 3, 2, 2, 1], (1.0, 1.0)) == 6  # 4+2 and 3+2+1
    assert jit.queue_time([4, 4], (1.0, 0.5)) == 8  # the slow thread takes its task at time 0
    assert jit.queue_time([4, 4, 4], (1.0, 0.5)) == 8  # the fast one does two


SQUARE = [(48, 48), (1000, 1000), (4096, 4096), (16384, 16384)]


@pytest.mark.parametrize("n_batch", [1, 3, 8])
@pytest.mark.parametrize("causal,t_q,t_k", [(c, *n) for c in (False, True) for n in SQUARE]
                         + [(c, *n) for c in (False, "bottom_right", "top_left") for n in [(700, 300), (300, 700)]])
def test_default_blocks_are_guided_and_end_the_queue_within_a_panel(causal, n_batch, t_q, t_k):
    """Whole panels, at most MAX_PANELS, covering every query once; each task within
    1/(2 threads) of the work queued when it is taken (or one panel); and the queue ends
    within one panel of a perfect share, on equal cores and with one core at 3/4 speed."""
    nr, threads = jit.PATHS["avx512"].nr(4), 2
    blocks = jit.default_blocks(n_batch, t_q, causal, threads=threads, path="avx512", t_k=t_k)
    in_query_order = sorted(blocks)
    assert in_query_order == (list(blocks[::-1]) if causal else list(blocks))  # the kernel's queue order
    assert in_query_order[0][0] == 0 and in_query_order[-1][1] == t_q
    assert all(a[1] == b[0] for a, b in zip(in_query_order, in_query_order[1:]))
    assert all(start % nr == 0 and 0 < stop - start <= jit.MAX_PANELS * nr for start, stop in blocks)

    offset = causal_offset(causal, t_q, t_k)
    panel_keys = {start: t_k if offset is None else min(t_k, max(0, min(t_q, start + nr) + offset))
                  for start in range(0, t_q, nr)}
    tasks = [(sum(panel_keys[p] for p in range(start, stop, nr)), stop - start <= nr)
             for start, stop in blocks for _ in range(n_batch)]
    queued = sum(work for work, _ in tasks)
    for work, one_panel in tasks:
        assert one_panel or work <= queued / (2 * threads)
        queued -= work
    work = [w for w, _ in tasks]
    for speeds in ((1.0, 1.0), (1.0, 0.75)):
        assert jit.queue_time(work, speeds) <= sum(work) / sum(speeds) + max(panel_keys.values()) / min(speeds)


def test_default_blocks_on_one_thread_are_as_large_as_allowed():
    nr = jit.PATHS["avx512"].nr(4)
    sizes = [stop - start for start, stop in jit.default_blocks(1, 4096, False, threads=1, path="avx512")]
    assert sizes == [jit.MAX_PANELS * nr] * 7 + [4096 - 7 * jit.MAX_PANELS * nr]


@pytest.mark.parametrize("causal,t_q,t_k", [(False, 1000, 1000), (True, 1000, 1000), ("bottom_right", 900, 400),
                                            ("bottom_right", 400, 900), ("top_left", 900, 400)])
def test_guided_blocks_give_the_bits_of_one_panel_blocks(causal, t_q, t_k):
    """Blocks start on panel boundaries, so grouping panels differently changes no bit."""
    rng = np.random.default_rng(6)
    q = rng.standard_normal((2, t_q, 64), dtype=np.float32)
    k, v = (rng.standard_normal((2, t_k, 64), dtype=np.float32) for _ in range(2))
    nr = jit.PATHS[jit.host_path()].nr(4)
    guided = jit.flash_attention(q, k, v, causal=causal, return_lse=True)
    one_panel = jit.flash_attention(q, k, v, causal=causal, block_q=nr, return_lse=True)
    for a, b in zip(guided, one_panel):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal,t_k", [(False, 300), (True, None), ("bottom_right", 200), ("top_left", 200)])
def test_queries_past_the_last_full_panel_run_one_vector_wide_with_the_same_bits(path, dtype, causal, t_k):
    """Blocks of a panel and one vector: the vector's queries run on the narrow micro-kernel,
    and give the bits they get as part of a full panel (every lane computes alone)."""
    shape = jit.PATHS[path]
    nr, lanes = shape.nr(np.dtype(dtype).itemsize), shape.narrow.nr(np.dtype(dtype).itemsize)
    assert shape.narrow.nv == (shape.nv if shape.loops else 1)
    rng = np.random.default_rng(8)
    t_q = 4 * (nr + lanes) + 3
    q = rng.standard_normal((2, t_q, 40)).astype(dtype)
    k, v = (rng.standard_normal((2, t_k or t_q, 40)).astype(dtype) for _ in range(2))
    narrow = jit.flash_attention(q, k, v, causal=causal, block_q=nr + lanes, return_lse=True, path=path)
    wide = jit.flash_attention(q, k, v, causal=causal, block_q=nr, return_lse=True, path=path)
    for a, b in zip(narrow, wide):
        np.testing.assert_array_equal(a, b)
    assert_matches(q, k, v, causal, block_q=nr + lanes, path=path)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows_are_exact_zeros(path, dtype):
    """bottom_right with T_q > T_k: the first T_q - T_k queries see no key at all."""
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((3, t, 8)).astype(dtype) for t in (50, 20, 20))
    out, lse = jit.flash_attention(q, k, v, causal="bottom_right", block_q=16, block_k=8, return_lse=True, path=path)
    assert np.all(out[:, :30] == 0) and np.all(np.isneginf(lse[:, :30]))
    assert np.all(np.isfinite(lse[:, 30:]))
    assert_matches(q, k, v, "bottom_right", block_q=16, block_k=8, path=path)


@pytest.mark.parametrize("path", PATHS)
def test_paths_agree_with_each_other(path):
    """Every path computes the same numbers up to rounding, including the padded shapes."""
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 97, d)).astype(np.float32) for d in (13, 13, 11))
    np.testing.assert_allclose(jit.flash_attention(q, k, v, causal=True, path=path),
                               jit.flash_attention(q, k, v, causal=True, path="loops"), rtol=0, atol=2e-6)


def test_dtypes_are_kept():
    x = np.ones((4, 8), np.float32)
    assert jit.flash_attention(x, x, x).dtype == np.float32
    assert jit.flash_attention(x, x, x.astype(np.float64)).dtype == np.float64
    out, lse = jit.flash_attention(*(x.astype(np.float16),) * 3, return_lse=True)  # computed in float32
    assert out.dtype == lse.dtype == np.float16


@settings(max_examples=30, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    rows=st.integers(1, 4),
    n=st.integers(1, 2500),
    block_k=st.integers(1, 600),
    magnitude=st.sampled_from([1e-2, 1.0, 1e2, 1e4]),
    seed=st.integers(0, 2**32 - 1),
)
def test_softmax_matches(dtype, rows, n, block_k, magnitude, seed):
    """Each weight is exp(x - m) / l with the same x - m as numpy: exp is within 1 ulp, and
    l adds n terms in another order (measured error at most 0.41 sqrt(n) eps, so the bound
    is 4 sqrt(n) eps). Weights below the smallest normal number are compared absolutely."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, n)) * magnitude).astype(dtype)
    x[rng.random(x.shape) < 0.1] = -np.inf
    if rows > 1:
        x[0] = -np.inf  # a fully masked row gives zeros
    info = np.finfo(dtype)
    np.testing.assert_allclose(
        jit.softmax(x, block_k=block_k), attncore.softmax(x), rtol=4 * np.sqrt(n) * info.eps, atol=info.tiny
    )


def ulps(result, exact, dtype):
    """|result - exact| in units of the spacing of `dtype` at the correctly rounded exact value."""
    rounded = exact.astype(dtype)
    return np.abs(result.astype(exact.dtype) - exact) / np.spacing(np.abs(rounded)).astype(exact.dtype)


@pytest.mark.parametrize(
    "dtype, wide, lo, hi",
    [(np.float32, np.float64, -110, 89), (np.float64, np.longdouble, -760, 710)],
)
def test_exp_within_one_ulp(dtype, wide, lo, hi):
    """Against exp in a wider type: at most 1 ulp of the correctly rounded result, where an
    ulp below the smallest normal number is one denormal step; overflow exactly as np.exp."""
    if np.finfo(wide).eps >= np.finfo(dtype).eps:
        pytest.skip("no wider float type than float64 on this platform")
    rng = np.random.default_rng(2)
    x = np.concatenate([np.linspace(lo, hi, 2_000_001), rng.uniform(-1, 1, 200_000)]).astype(dtype)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(wide))
        finite = np.isfinite(exact.astype(dtype))
        result = jit.exp(x)
    assert np.all(ulps(result[finite], exact[finite], dtype) <= 1)
    np.testing.assert_array_equal(np.isinf(result), ~finite)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_of_very_negative_is_zero_or_denormal(dtype):
    x = np.array([-np.inf, -1e30, -1e4, -800, -750, -745, -120, -104, -103, -90, -88], dtype)
    result = jit.exp(x)
    assert np.all(result >= 0)  # so no NaN either
    tiny = np.finfo(dtype).tiny
    assert np.all(result[x < np.log(tiny)] < tiny)
    assert np.all(result[:3] == 0)
    assert np.isposinf(jit.exp(np.array([np.inf, 1e4], dtype))).all()


def test_exp_of_float16_is_computed_in_float32():
    """As flash_attention: float16 in, the float32 result rounded to float16 out."""
    x = np.linspace(-20, 11, 1001).astype(np.float16)
    for function in (jit.exp, jit.exp2):
        result = function(x)
        assert result.dtype == np.float16 and result.shape == x.shape
        np.testing.assert_array_equal(result, function(x.astype(np.float32)).astype(np.float16))


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 2.0e-7), (np.float64, 3e-16)])
def test_exp2_relative_error(dtype, tolerance):
    """2^x against float64 (longdouble for float64) where the result is normal; 2^0 is exactly 1."""
    info = np.finfo(dtype)
    wide = np.longdouble if dtype == np.float64 else np.float64
    if dtype == np.float64 and np.finfo(np.longdouble).eps >= info.eps:
        pytest.skip("no wider float type than float64 on this platform")
    x = np.concatenate([np.linspace(-(info.maxexp - 2), 0, 1_000_001), np.linspace(-1, 1, 100_001)]).astype(dtype)
    exact = np.exp2(x.astype(wide))
    assert np.max(np.abs(jit.exp2(x).astype(wide) / exact - 1)) < tolerance
    assert jit.exp2(np.zeros(3, dtype)).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp2_ends_of_the_range(dtype):
    """Below the normal range the result is 0 (never NaN), 2^-inf = 0, 2^x overflows to inf."""
    info = np.finfo(dtype)
    x = np.array([-np.inf, -1e30, -(info.maxexp + 100), -(info.maxexp - 0.5)], dtype)
    assert np.all(jit.exp2(x) == 0)
    assert np.all(jit.exp2(np.array([info.maxexp, 1e30, np.inf], dtype)) == np.inf)
    with pytest.raises(ValueError, match="^x must be a floating-point array"):
        jit.exp2(np.arange(3))


def test_host_path_follows_cpu_features():
    assert jit.host_path({"avx512f": True, "avx2": True, "fma": True}) == "avx512"
    assert jit.host_path({"avx2": True, "fma": True}) == "avx2"
    assert jit.host_path({"avx2": True}) == "portable"  # AVX2 without FMA: no llvm.fma
    assert jit.host_path({"neon": True}) == "portable"
    assert jit.kernel_info()["path"] == jit.host_path()


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_tile_product_and_kernel_info(path):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((13, 64), dtype=np.float32), rng.standard_normal((64, 70), dtype=np.float32)
    np.testing.assert_allclose(jit.tile_product(a, b, path=path), a @ b, rtol=0, atol=1e-4)
    info = jit.kernel_info(path, asm=True)
    assert info["path"] == path and info["forced_by"] == "argument"
    assert info["nr"]["float32"] % info["lanes"]["float32"] == 0
    assert info["accumulators"] == info["mr"] * info["nr"]["float32"] // info["lanes"]["float32"]
    if platform.machine() in ("x86_64", "AMD64"):
        assert "fmadd" in info["asm"] or "mulps" in info["asm"]


X86_64 = platform.machine().lower() in ("x86_64", "amd64")


@pytest.mark.skipif(not X86_64, reason="jit.profile reads rdtsc: x86-64 only")
def test_profile_shares_add_up():
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((2, 300, 16), dtype=np.float32) for _ in range(3))
    for causal in (False, True):
        shares = jit.profile(q, k, v, causal=causal, path="portable")
        assert list(shares) == list(jit.PHASES)
        assert all(0 <= x <= 1 for x in shares.values()) and sum(shares.values()) == pytest.approx(1)


@given(st.sampled_from([np.float32, np.float64]).flatmap(lambda dtype: st.lists(
    st.floats(width=np.finfo(dtype).bits, allow_nan=True, allow_infinity=True), max_size=300).map(
    lambda entries: np.array(entries, dtype))))
def test_the_kernels_pass_finds_the_largest_magnitude_and_any_nan(x):
    """_flash's one pass over q, k and v (_largest_bits): the largest |entry|, inf if one is
    infinite, NaN if one is NaN (a float max could skip it), 0 for no entries."""
    bits = jit.flash._largest_bits(x)
    largest = np.array([bits], f"i{x.itemsize}").view(x.dtype)[0]
    if np.isnan(x).any():
        assert np.isnan(largest)
    else:
        assert largest == (np.abs(x).max() if x.size else 0)



@settings(max_examples=60, deadline=None)
@given(path=st.sampled_from(sorted(jit.PATHS)), dtype=st.sampled_from([np.float32, np.uint32, np.float64]),
       rows=st.integers(0, 40), cols=st.integers(0, 40), spare=st.tuples(*[st.integers(0, 3)] * 4),
       seed=st.integers(0, 2**16))
def test_the_block_transpose_moves_every_entry_and_no_other(path, dtype, rows, cols, spare, seed):
    """transpose._transpose: dst[:cols, :rows] = src[:rows, :cols].T through the L x L blocks in
    registers and the edge loop, on every path's vector width; src's other entries are not
    read into dst, and dst's other entries keep their values."""
    from attncore.jit.transpose import _transpose

    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**32, (rows + spare[0], cols + spare[1], 2), dtype=np.uint64).astype(np.uint32)
    src = words.view(np.uint64)[..., 0].astype(dtype) if dtype == np.float64 else words[..., 0].view(dtype)
    src = np.ascontiguousarray(src)
    dst = np.full((cols + spare[2], rows + spare[3]), 7, dtype)
    expected = dst.copy()
    expected[:cols, :rows] = src[:rows, :cols].T
    _transpose(src, dst, rows, cols, jit.PATHS[path])
    assert np.array_equal(dst.view(f"u{dst.itemsize}"), expected.view(f"u{dst.itemsize}"))

def test_profile_refuses_cleanly_off_x86_64(monkeypatch):
    """Off x86-64 llvm.readcyclecounter may read a register user space cannot (SIGILL on
    AArch64): profile must refuse before any kernel runs."""
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    monkeypatch.setattr(jit.introspection, "_run", lambda *args: pytest.fail("profile ran the kernel"))
    x = np.ones((4, 8), np.float32)
    with pytest.raises(NotImplementedError, match=r"x86-64 cycle counter \(rdtsc\).*'aarch64'"):
        jit.profile(x, x, x)


@pytest.mark.parametrize(
    "a_shape, b_shape, match",
    [
        ((2, 5), (3, 2), r"a and b must share K .*a has shape \(2, 5\), b has shape \(3, 2\); b needs shape \(5, N\)"),
        ((2, 4000), (3, 2), r"a has shape \(2, 4000\), b has shape \(3, 2\); b needs shape \(4000, N\)"),
        ((3,), (3, 2), r"a must have shape \(M, K\), got shape \(3,\)"),
        ((2, 3), (3,), r"b must have shape \(K, N\), got shape \(3,\)"),
        ((2, 3, 3), (3, 2), r"a must have shape \(M, K\), got shape \(2, 3, 3\)"),
    ],
    ids=["K differs", "K far larger", "a 1-D", "b 1-D", "a 3-D"],
)
def test_tile_product_checks_shapes_before_the_kernel_reads(monkeypatch, a_shape, b_shape, match):
    """Review 4.3.1: (2, 5) @ (3, 2) read past b and returned 1.16e33 and NaN."""
    monkeypatch.setattr(jit.introspection, "_products", lambda *args: pytest.fail("compiled code ran"))
    with pytest.raises(ValueError, match=match):
        jit.tile_product(np.ones(a_shape, np.float32), np.ones(b_shape, np.float32))


@pytest.mark.parametrize("block_k", [16, 7])
@pytest.mark.parametrize("cut", ["k rows", "k columns", "v columns"])
def test_the_kernel_refuses_k_and_v_without_their_padding(block_k, cut):
    """Review 4.3.2: the micro-kernels read whole mr-row tiles of k with no bound checks; the
    padding that makes this safe (layout.py) is checked by _flash before any tile is read."""
    x = np.ones((2, 21, 8), np.float32)
    arguments, _ = jit.layout._prepare(x, x, x, False, None, block_k, None, None)
    k, v = arguments.k, arguments.v
    assert arguments.shape.mr in (4, 8, 16)  # 21 keys and 8 columns are never a whole number of tiles
    short = {"k rows": dict(k=k[:, :21]), "k columns": dict(k=k[:, :, :7]), "v columns": dict(v=v[:, :, :7])}
    short = {name: {key: np.ascontiguousarray(x) for key, x in cut.items()} for name, cut in short.items()}
    cycles = jit.flash._cycle_counts(arguments)
    jit.flash._flash(*arguments, False, cycles)  # as laid out: runs
    assert np.allclose(arguments.out, attncore.flash_attention(x, x, x), atol=1e-6)
    with pytest.raises(ValueError, match="k and v lack the padding of the key tiles"):
        jit.flash._flash(*arguments._replace(**short[cut]), False, cycles)


@pytest.mark.slow
def test_without_avx_the_portable_path_runs_instead_of_aborting(tmp_path):
    """Review 4.2.1: under NUMBA_ENABLE_AVX=0 the AVX-512 intrinsics were still emitted (from the
    raw host features) and LLVM aborted the process (exit 134). The paths now follow what Numba
    compiles for: the portable path, with a note when the CPU could run a faster one; a forced
    avx512 path gets generic vector IR that LLVM lowers."""
    code = (
        "import warnings\n"
        "import numpy as np\n"
        "import attncore\n"
        "from attncore import jit\n"
        "rng = np.random.default_rng(0)\n"
        "q, k, v = (rng.standard_normal((2, 37, 16)).astype(np.float32) for _ in range(3))\n"
        "want = attncore.flash_attention(q, k, v, causal=True)\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    errors = [float(np.abs(jit.flash_attention(q, k, v, causal=True, path=p) - want).max())\n"
        "              for p in (None, 'avx512')]\n"
        "info = jit.kernel_info()\n"
        "print(info['path'], info['note'] is not None, len(caught), max(errors))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "NUMBA_ENABLE_AVX": "0", "NUMBA_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    path, noted, warned, error = done.stdout.split()
    assert path == "portable" and float(error) < 1e-5
    slower = jit.host_path(jit.isa._cpu_features()) != "portable"  # this CPU has AVX2 or AVX-512
    assert noted == str(slower) and warned == str(int(slower))


def test_environment_variable_forces_a_path():
    code = "from attncore import jit\ninfo = jit.kernel_info()\nprint(info['path'], info['forced_by'])"
    assert run_python(code, ATTNCORE_JIT_PATH="loops").split() == ["loops", "ATTNCORE_JIT_PATH"]
    code = "import numpy as np\nfrom attncore import jit\njit.flash_attention(*(np.ones((4, 8)),) * 3)"
    failed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "ATTNCORE_JIT_PATH": "avx1024"})
    assert failed.returncode != 0 and "path must be one of" in failed.stderr


@pytest.mark.parametrize(
    "kwargs",
    [
        {"block_q": 0},
        {"block_k": -1},
        {"block_q": 2.5},
        {"block_k": True},
        {"scale": -1.0},
        {"causal": "diagonal"},
        {"path": "avx1024"},
    ],
)
def test_bad_arguments_raise(kwargs):
    """Each message names the argument (review 5.1.2: an unrelated ValueError passed too)."""
    x = np.ones((4, 8), np.float32)
    (name,) = kwargs
    with pytest.raises(ValueError, match=f"^{name} must be"):
        jit.flash_attention(x, x, x, **kwargs)


def test_bad_inputs_raise():
    x = np.ones((4, 8), np.float32)
    with pytest.raises(ValueError, match="ambiguous"):
        jit.flash_attention(x, x[:3], x[:3], causal=True)
    with pytest.raises(ValueError, match="d_k"):
        jit.flash_attention(x, x[:, :4], x)
    with pytest.raises(ValueError, match="floating"):
        jit.flash_attention(x.astype(int), x, x)
    with pytest.raises(ValueError, match="finite"):
        jit.flash_attention(np.where(x == 1, np.nan, x), x, x)
    with pytest.raises(ValueError, match="broadcast"):
        jit.flash_attention(np.ones((2, 4, 8)), np.ones((3, 4, 8)), np.ones((3, 4, 8)))
    with pytest.raises(ValueError, match="^block_k must be an integer >= 1"):
        jit.softmax(x, block_k=0)
    with pytest.raises(ValueError, match="^x must be finite or -inf, got nan"):
        jit.softmax(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="^x must be a floating-point array"):
        jit.exp(np.arange(3))


def test_a_remembered_layout_keeps_every_check(monkeypatch):
    """A call with the shapes and settings of an earlier one reuses its layout (jit.layout._LAYOUTS),
    but an argument of another type or value is still checked, and the path and thread
    count of this call are the ones used."""
    x = np.random.default_rng(7).standard_normal((2, 40, 8)).astype(np.float32)
    for causal, scale, block_q in ((True, 1.0, None), (False, 0.5, 48)):
        first = jit.flash_attention(x, x, x, causal=causal, scale=scale, block_q=block_q)
        again = jit.flash_attention(x, x, x, causal=causal, scale=scale, block_q=block_q)
        np.testing.assert_array_equal(first, again)
    with pytest.raises(ValueError, match="causal must be"):
        jit.flash_attention(x, x, x, causal=1, scale=1.0)
    with pytest.raises(ValueError, match="scale must be"):
        jit.flash_attention(x, x, x, causal=True, scale=True)
    with pytest.raises(ValueError, match="block_q"):
        jit.flash_attention(x, x, x, scale=0.5, block_q=48.0)
    with pytest.raises(ValueError, match="^k must be finite"):
        jit.flash_attention(x, np.where(x > 2, np.inf, x), x, causal=True, scale=1.0)
    expected = jit.flash_attention(x, x, x, path="loops")
    monkeypatch.setenv(jit.ENV_PATH, "loops")
    assert jit.layout._prepare(x, x, x, False, None, jit.BLOCK_K, None, None)[1].shape.name == "loops"
    np.testing.assert_array_equal(jit.flash_attention(x, x, x), expected)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert jit.layout._prepare(x, x, x, False, None, jit.BLOCK_K, None, None)[1].settings.threads == 1
        np.testing.assert_array_equal(jit.flash_attention(x, x, x), expected)
    finally:
        numba.set_num_threads(threads)


def test_read_only_and_strided_inputs_give_the_same_bits_without_a_new_compile():
    """The arrays the kernel gets are C-contiguous and writeable whatever the caller passes:
    no read-only or strided variant of the kernel is compiled."""
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((2, 70, 16)).astype(np.float32) for _ in range(3))
    expected = jit.flash_attention(q, k, v, causal=True)
    compiled = jit.kernel_info()["compiled_signatures"]
    read_only = [x.copy() for x in (q, k, v)]
    for x in read_only:
        x.flags.writeable = False
    strided = [np.asfortranarray(x) for x in (q, k, v)]
    for inputs in (read_only, strided, [np.broadcast_to(x, (3, *x.shape))[1] for x in (q, k, v)]):
        np.testing.assert_array_equal(jit.flash_attention(*inputs, causal=True), expected)
    assert jit.kernel_info()["compiled_signatures"] == compiled


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    argument=st.sampled_from("qkv"),
    bad=st.sampled_from([np.nan, np.inf, -np.inf]),
    transposed=st.booleans(),
    where=st.integers(0, 8 * 40 - 1),
)
def test_every_nan_or_inf_is_named(dtype, argument, bad, transposed, where):
    """The kernel's finiteness check (each thread sums x - x over its share of q, k and v,
    after any copy to float32 or float64) finds a single bad entry anywhere, in any dtype
    and layout, and the message names the argument."""
    arrays = {name: np.ones((40, 8), dtype) for name in "qkv"}
    arrays[argument].flat[where] = bad
    if transposed:
        arrays = {name: np.ascontiguousarray(x.T).T for name, x in arrays.items()}
    with pytest.raises(ValueError, match=f"^{argument} must be finite"):
        jit.flash_attention(arrays["q"], arrays["k"], arrays["v"])


def run_python(code, **env):
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, **env}
    ).stdout


def test_import_attncore_does_not_import_numba():
    assert run_python("import sys, attncore; print('numba' in sys.modules)").strip() == "False"


def test_missing_numba_gives_install_hint():
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "try:\n    import attncore.jit\nexcept ImportError as e:\n    print(e)"
    )
    assert "pip install attncore[jit]" in run_python(code)


@pytest.mark.slow
def test_cache_is_written_then_loaded(tmp_path):
    """A first process compiles and writes cache index files; a second loads them all.
    Each path is its own specialisation of the kernel, cached separately."""
    code = (
        "import numpy as np\n"
        "from attncore import jit\n"
        "x = np.ones((2, 8, 4), np.float32)\n"
        "jit.flash_attention(x, x, x, causal=True)\n"
        "jit.flash_attention(x, x, x, path='portable')\n"
        "info = jit.kernel_info()\n"
        "print(info['cache_hits'], info['cache_misses'])"
    )
    two = "2" if jit.host_path() != "portable" else "1"
    assert run_python(code, NUMBA_CACHE_DIR=str(tmp_path)).split() == ["0", two]
    index_files = sorted(p.name for p in tmp_path.rglob("*.nbi"))
    assert any(name.startswith("flash._flash-") for name in index_files)
    assert run_python(code, NUMBA_CACHE_DIR=str(tmp_path)).split() == [two, "0"]
    assert sorted(p.name for p in tmp_path.rglob("*.nbi")) == index_files


def test_the_overflow_check_forms_no_scores_for_ordinary_inputs(monkeypatch):
    """The kernel would return an overflowing row as a silent zero row, so flash_attention
    checks the scores first (tests/test_contract.py); for inputs whose d_k max|q| max|k|
    bound is far from overflow that costs one pass over q and k, and no score is formed."""
    def no_scores(*args, **kwargs):
        raise AssertionError("scores formed in Python")

    x = np.random.default_rng(9).standard_normal((2, 40, 8)).astype(np.float32)
    expected = jit.flash_attention(x, x, x)
    monkeypatch.setattr(jit.layout, "scores", no_scores)
    np.testing.assert_array_equal(jit.flash_attention(x, x, x), expected)
    with pytest.raises(AssertionError, match="scores formed"):
        jit.flash_attention(x * 1e19, x * 1e19, x)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_takes_axis_and_mask_as_attncore_softmax(axis):
    """jit.softmax has attncore.softmax's keyword tail: axis and a boolean mask that broadcasts
    (a slice with nothing kept gives zeros); block_k by position still works, deprecated."""
    rng = np.random.default_rng(axis + 3)
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    mask = rng.random((5, 7)) < 0.6
    mask[:, 2] = False
    eps = np.finfo(np.float32).eps
    np.testing.assert_allclose(jit.softmax(x, axis=axis, mask=mask), attncore.softmax(x, axis=axis, mask=mask),
                               rtol=16 * eps, atol=np.finfo(np.float32).tiny)
    with pytest.warns(DeprecationWarning, match=r"attncore\.jit\.softmax: pass block_k=\.\.\. by keyword"):
        np.testing.assert_array_equal(jit.softmax(x, 3), jit.softmax(x, block_k=3))
    with pytest.raises(ValueError, match=r"mask with shape \(4,\) does not broadcast"):
        jit.softmax(x, mask=np.ones(4, bool))
    with pytest.raises(np.exceptions.AxisError, match=r"axis must be an integer in \[-3, 3\) for x of shape"):
        jit.softmax(x, axis=3)


def test_numba_outside_the_tested_versions_is_refused_by_name():
    """attncore.jit reads parts of Numba that are not public, so it refuses the versions it is not
    tested with, saying which it needs; pyproject's jit extra names the same range."""
    import re
    import tomllib
    from pathlib import Path

    from attncore.jit.compiling import TESTED_NUMBA, require_tested_numba

    require_tested_numba(numba.__version__)
    (low_major, low_minor), (high_major, high_minor) = TESTED_NUMBA
    for version in (f"{low_major}.{low_minor - 1}.9", f"{high_major}.{high_minor}.0",
                    f"{high_major}.{high_minor}.0rc1"):
        with pytest.raises(ImportError, match=rf"^attncore\.jit is tested with numba>={low_major}\.{low_minor},"
                                              rf"<{high_major}\.{high_minor} .* this is Numba {re.escape(version)}"):
            require_tested_numba(version)
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    spec = next(r for r in pyproject["project"]["optional-dependencies"]["jit"] if r.startswith("numba"))
    assert f">={low_major}.{low_minor}" in spec
    assert "<" not in spec or f"<{high_major}.{high_minor}" in spec


def test_where_numbas_private_parts_moved_the_public_api_stands_in(monkeypatch):
    """host_features reads the features Numba's target machine was made with (a private attribute)
    and, without it, what numba.core.codegen's public function says, with a RuntimeWarning; the
    cache locators go first in Numba's list, and without that list Numba's own stay, with a warning."""
    from numba.core import caching
    from numba.core.registry import cpu_target

    from attncore.jit import compiling, isa

    private = isa.host_features()
    compiling._warn_numba_moved.cache_clear()
    monkeypatch.setattr(cpu_target.target_context, "codegen", lambda: object())
    with pytest.warns(RuntimeWarning, match=r"reads the JIT codegen's _tm_features, which Numba .* lacks; it uses "
                                            r"numba\.core\.codegen\.get_host_cpu_features"):
        assert isa.host_features() == private
    monkeypatch.delattr(caching.CacheImpl, "_locator_classes")
    with pytest.warns(RuntimeWarning, match=r"reads numba\.core\.caching\.CacheImpl\._locator_classes, which Numba"):
        compiling._install_locators()
    compiling._warn_numba_moved.cache_clear()
