"""attncore.jit with precision="bf16": bfloat16 products, float32 sums and softmax.

Each way of running it (native vdpbf16ps where this CPU and Numba have it; emulated,
forced, on every path) is checked against a NumPy reference built from
attncore.bfloat16's rounding (the same bf16 operands and weights, sums in float64), within
float32 accumulation error, and against float64 attention within a bound derived from
bfloat16's unit roundoff. No wall-clock assertions.

The native way (vdpbf16ps) runs only where the CPU has AVX512_BF16; elsewhere (GitHub's
runners, most laptops) its parametrisations are not generated and
test_native_and_emulated_agree_within_float32_error and
test_the_probe_times_the_same_products_both_ways skip: untested in CI, as the AMX kernel
(tests/test_jit_amx.py says why Intel's SDE is no way out)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import attncore  # noqa: E402
from attncore import jit, masks  # noqa: E402
from attncore.bfloat16 import round_to_bfloat16  # noqa: E402
from attncore.jit.bf16 import native_available  # noqa: E402

pytestmark = pytest.mark.xdist_group("numba-flash")  # one worker compiles each kernel once (conftest.py)

U = 2.0**-9  # bfloat16's unit roundoff: |bf16(x) - x| <= U |x|
NATIVE = native_available(jit.PATHS["avx512"])
# (path, precision): what runs natively here, and the emulation forced on every path
WAYS = ([("avx512", "bf16_native")] if NATIVE else []) + [(path, "bf16_emulated") for path in sorted(jit.PATHS)]


def _mask(t_q, t_k, causal):
    if causal is False:
        return None
    return masks.causal(t_q, t_k, causal=causal)


def bf16_reference(q, k, v, causal=False, block_k=jit.BLOCK_K, scale=None, slack=64 * 2.0**-24):
    """What the kernel computes, in float64 from the same bf16 operands: q, k, v rounded; scores
    s = scale q . k; in each key tile the weights p = bf16(exp(s - m_t)), m_t the running max of
    the row up to that tile's last key (the online softmax rounds P before it knows the final
    max); out = sum_j p_j e^(m_t - m) v_j / sum_j p_j e^(m_t - m), lse = m + log of that sum.

    Also returns, per row, `ambiguous`: the share of the row's weight held by weights within
    `slack` (relative) of a bfloat16 rounding tie, which float32 rounding may send the other way.
    """
    q, k, v = (round_to_bfloat16(x).astype(np.float64) for x in (q, k, v))
    t_q, t_k = q.shape[-2], k.shape[-2]
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = scale * (q @ np.swapaxes(k, -1, -2))
    mask = _mask(t_q, t_k, causal)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    tile_max = np.stack([s[..., k0:k0 + block_k].max(axis=-1) for k0 in range(0, t_k, block_k)], axis=-1)
    running = np.maximum.accumulate(tile_max, axis=-1)  # (..., T_q, tiles)
    m_t = np.repeat(running, block_k, axis=-1)[..., :t_k]
    m = running[..., -1:]
    with np.errstate(invalid="ignore"):
        exact = np.where(np.isneginf(s), 0.0, np.exp(s - np.where(np.isneginf(m_t), 0, m_t)))
        factor = np.where(np.isneginf(m_t), 0.0, np.exp(m_t - np.where(np.isneginf(m), 0, m)))
    p = round_to_bfloat16(exact).astype(np.float64)
    w = p * factor
    total = w.sum(axis=-1, keepdims=True)
    seen = total > 0
    out = np.where(seen, w @ v / np.where(seen, total, 1), 0.0)
    with np.errstate(divide="ignore"):
        lse = np.where(seen, m + np.log(np.where(seen, total, 1)), -np.inf)[..., 0]
    flips = round_to_bfloat16(exact * (1 + slack)) != round_to_bfloat16(exact * (1 - slack))
    ambiguous = np.where(seen, (w * flips).sum(axis=-1, keepdims=True) / np.where(seen, total, 1), 0.0)
    return out, lse, ambiguous, s


def assert_matches_bf16_reference(q, k, v, causal, path, precision, **kwargs):
    """Within float32 accumulation error of bf16_reference: the scores differ by a few float32
    eps times (1 + max|s|) (sums in another order, the scale applied elsewhere), so a weight by
    that relative amount, and the output by that times max|v|; plus, for a weight that sat on a
    bfloat16 tie, one bfloat16 step (2 U of it, twice: numerator and sum)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out, lse = jit.flash_attention(q, k, v, causal=causal, return_lse=True, path=path, precision=precision,
                                       **kwargs)
        # the key tiles the kernel took (block_k None: the route's default_block_k)
        block_k = jit.layout._prepare(q, k, v, causal, None, kwargs.get("block_k"), kwargs.get("scale"), path,
                                      precision)[1].settings.block_k
    ref, ref_lse, ambiguous, s = bf16_reference(q, k, v, causal, block_k, kwargs.get("scale"))
    assert out.shape == ref.shape and lse.shape == ref_lse.shape
    unit = 16 * 2.0**-23 * (1 + np.abs(np.where(np.isfinite(s), s, 0)).max(initial=0))
    v_max = np.abs(v).max(initial=0)
    assert_below(np.abs(out - ref), unit * v_max + 8 * U * ambiguous * v_max)
    np.testing.assert_array_equal(np.isneginf(lse), np.isneginf(ref_lse))
    seen = np.isfinite(ref_lse)
    assert_below(np.abs(lse[seen] - ref_lse[seen]), unit + 4 * U * ambiguous[..., 0][seen])
    return out, lse


def assert_below(error, bound):
    """error <= bound entry by entry (broadcast), naming the worst entry when not."""
    error, bound = np.broadcast_arrays(error, bound)
    excess = error - bound
    worst = np.unravel_index(np.argmax(excess), excess.shape) if excess.size else None
    assert excess.size == 0 or excess[worst] <= 0, (
        f"error {error[worst]:.3g} above its bound {bound[worst]:.3g} at {worst}")


def float64_bound(q, k, v, causal, scale=None):
    """|bf16 out - float64 out| per entry, derived from U: q and k rounded move a score by at
    most ds = 2 U scale sum_c |q_c||k_c| (the row's largest); the weights' ratios by e^(ds),
    P's rounding by (1 + U) more, so the normalised weights by at most 2 e / (1 - e) in total
    (e = e^(ds) (1 + U) - 1), and v's rounding by U max|v|. Plus float32 slack."""
    q64, k64 = q.astype(np.float64), k.astype(np.float64)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    spread = scale * (np.abs(q64) @ np.swapaxes(np.abs(k64), -1, -2))
    mask = _mask(q.shape[-2], k.shape[-2], causal)
    if mask is not None:
        spread = np.where(mask, spread, 0)
    ds = (2 * U + 2.0**-20) * spread.max(axis=-1, keepdims=True) + 2.0**-18
    e = np.exp(ds) * (1 + U) - 1
    return np.abs(v).max() * (2 * e / (1 - e) + U) + 2.0**-18


def inputs(shape_q, shape_k, d_v, sigma=1.0, seed=0):
    rng = np.random.default_rng(seed)
    q = (sigma * rng.standard_normal((*shape_q,))).astype(np.float32)
    k = (sigma * rng.standard_normal((*shape_k,))).astype(np.float32)
    v = rng.standard_normal((*shape_k[:-1], d_v)).astype(np.float32)
    return q, k, v


@settings(max_examples=25, deadline=None)
@given(
    way=st.sampled_from(WAYS),
    causal=st.sampled_from([False, True, "top_left", "bottom_right"]),
    t_q=st.integers(1, 150),
    t_k=st.integers(1, 300),
    d=st.integers(1, 40),
    d_v=st.integers(1, 20),
    block_k=st.sampled_from([jit.BLOCK_K, 16, 37]),
    seed=st.integers(0, 2**16),
)
def test_matches_the_bf16_reference_and_float64(way, causal, t_q, t_k, d, d_v, block_k, seed):
    path, precision = way
    if causal is True:
        t_k = t_q
    q, k, v = inputs((2, t_q, d), (2, t_k, d), d_v, sigma=1.5, seed=seed)
    out, _ = assert_matches_bf16_reference(q, k, v, causal, path, precision, block_k=block_k)
    exact = attncore.attention(*(x.astype(np.float64) for x in (q, k, v)), mask=_mask(t_q, t_k, causal))
    assert_below(np.abs(out - exact), float64_bound(q, k, v, causal))


@pytest.mark.parametrize("causal", [False, True])
def test_native_and_emulated_agree_within_float32_error(causal):
    if not NATIVE:
        pytest.skip("no vdpbf16ps here (or Numba compiles without AVX512_BF16)")
    q, k, v = inputs((1, 3, 700, 64), (1, 3, 700, 64), 64, seed=3)
    native = jit.flash_attention(q, k, v, causal=causal, precision="bf16_native", path="avx512")
    emulated = jit.flash_attention(q, k, v, causal=causal, precision="bf16_emulated", path="avx512")
    assert_matches_bf16_reference(q, k, v, causal, "avx512", "bf16_native")
    assert np.abs(native - emulated).max() < 1e-3 * np.abs(v).max()
    assert not np.array_equal(native, jit.flash_attention(q, k, v, causal=causal))  # bf16 is not f32


@pytest.mark.parametrize("path, precision", WAYS)
def test_rows_stay_on_the_simplex(path, precision):
    """The weights the output is made of, bf16(p) / l, sum to 1 (l sums the rounded weights), so
    v = ones gives ones; the weights recovered from the lse (exact exponentials of the bf16
    scores) sum to 1 within the rounding of P: a relative 2 U at most, far less on average."""
    q, k, _ = inputs((2, 300, 64), (2, 300, 64), 1, sigma=1.0, seed=1)
    for causal in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ones, lse = jit.flash_attention(q, k, np.ones((2, 300, 5), np.float32), causal=causal, path=path,
                                            precision=precision, return_lse=True)
        np.testing.assert_allclose(ones, 1, rtol=0, atol=300 * 2.0**-23)
        weights = attncore.weights_from_lse(round_to_bfloat16(q).astype(np.float64),
                                            round_to_bfloat16(k).astype(np.float64), lse, causal=causal)
        np.testing.assert_allclose(weights.sum(axis=-1), 1, rtol=0, atol=2 * U)


def test_float64_error_is_bfloat16_sized_at_n_1024():
    """At d = 64 and unit-variance inputs the error is bfloat16's, not float32's (< 1e-6):
    above 1e-4, and below the derived bound."""
    q, k, v = inputs((1, 1, 1024, 64), (1, 1, 1024, 64), 64, seed=2)
    exact = attncore.attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64))
    error = np.abs(jit.flash_attention(q, k, v, precision="bf16") - exact)
    assert 1e-4 < error.max()
    assert_below(error, float64_bound(q, k, v, False))


def test_float32_default_is_unchanged_and_dtypes():
    q, k, v = inputs((2, 50, 16), (2, 70, 16), 8, seed=4)
    assert np.array_equal(jit.flash_attention(q, k, v), jit.flash_attention(q, k, v, precision="f32"))
    out = jit.flash_attention(q.astype(np.float64), k, v, precision="bf16_emulated")
    assert out.dtype == np.float64  # computed in float32 with bf16 products, returned in q's dtype


def test_fully_masked_rows_are_zeros():
    q, k, v = inputs((1, 5, 8), (1, 3, 8), 4, seed=5)
    for precision in ("bf16", "bf16_emulated") + (("bf16_native",) if NATIVE else ()):
        out, lse = jit.flash_attention(q, k, v, causal="bottom_right", precision=precision, return_lse=True)
        assert np.all(out[0, :2] == 0) and np.all(np.isneginf(lse[0, :2]))


@pytest.mark.parametrize("precision", ["bf16x", "float32", "", None, "BF16"])
def test_invalid_precision_names_the_choices(precision):
    q, k, v = inputs((1, 4, 8), (1, 4, 8), 4)
    with pytest.raises(ValueError, match=r"precision must be one of 'f32', 'bf16', 'bf16_native', 'bf16_emulated'"):
        jit.flash_attention(q, k, v, precision=precision)


def test_bf16_native_is_refused_where_vdpbf16ps_cannot_run():
    q, k, v = inputs((1, 4, 8), (1, 4, 8), 4)
    with pytest.raises(ValueError, match=r"precision='bf16_native' needs vdpbf16ps.*the path is 'avx2'"):
        jit.flash_attention(q, k, v, precision="bf16_native", path="avx2")


def test_the_probe_times_the_same_products_both_ways():
    """bf16_route's two probe kernels compute the same S = K qT from the same bf16 values (words of
    pairs on vdpbf16ps, float32 on vfmadd), within float32 summation order; its speedup is a
    positive ratio of times."""
    if not NATIVE:
        pytest.skip("no vdpbf16ps here (or Numba compiles without AVX512_BF16)")
    from attncore.jit import bf16_route

    wide = jit.PATHS["avx512"]
    nr = wide.nr(4)
    rng = np.random.default_rng(8)
    k, q_t = (round_to_bfloat16(rng.standard_normal(shape).astype(np.float32)) for shape in ((64, 64), (64, nr)))

    def words(x):  # x (rows, 2m), bf16 values -> (rows, m) words: column 2c in the low half, 2c + 1 in the high
        bits = np.ascontiguousarray(x).view(np.uint32) >> 16
        return np.ascontiguousarray(bits[:, 0::2] | bits[:, 1::2] << 16, np.uint32)

    s_native, s_float32 = np.empty((64, nr), np.float32), np.empty((64, nr), np.float32)
    column = np.zeros(nr, np.float32)
    bf16_route._native_products(words(k), words(q_t.T).T.copy(), s_native, column, 1, wide.with_bf16("native"))
    bf16_route._float32_products(k, q_t, s_float32, column, 1, wide)
    exact = k.astype(np.float64) @ q_t.astype(np.float64)
    bound = 64 * 2.0**-24 * (np.abs(k) @ np.abs(q_t))  # 64 float32 roundings of partial sums at most
    for s in (s_native, s_float32):
        assert np.all(np.abs(s - exact) <= bound)
    speedup = bf16_route.native_speedup(wide)
    assert 0 < speedup < np.inf


def test_emulation_off_the_native_path_says_so():
    from attncore.jit import bf16_route

    bf16_route._warn_emulated.cache_clear()
    q, k, v = inputs((1, 4, 8), (1, 4, 8), 4)
    with pytest.warns(RuntimeWarning, match="emulated on the 'portable' path"):
        jit.flash_attention(q, k, v, precision="bf16", path="portable")


def test_the_kernels_rounding_is_attncore_bfloat16s_bit_for_bit():
    """Ties to even, both signs, subnormals, the edge of the range, inf and NaN."""
    from attncore.jit.bf16 import round_to_bf16

    rng = np.random.default_rng(6)
    high = np.concatenate([np.arange(0x3E00, 0x3E00 + 2000), np.arange(0xBE00, 0xBE00 + 2000)]).astype(np.uint32)
    ties = (high << 16 | 0x8000).view(np.float32)  # exactly halfway between two bf16, both signs
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-45, 3.4e38, -3.39e38, 1.0 + 2.0**-8],
                       np.float32)
    x = np.concatenate([rng.standard_normal(5000).astype(np.float32), ties[np.isfinite(ties)], special])
    got, want = round_to_bf16(x.reshape(1, -1, 1)).ravel(), round_to_bfloat16(x)
    assert np.array_equal(got.view(np.uint32)[~np.isnan(want)], want.view(np.uint32)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))


BF16_IN_A_PROCESS = """
import hashlib
import numpy as np
from attncore import jit
rng = np.random.default_rng(11)
q, k, v = (rng.standard_normal((2, 300, 64)).astype(np.float32) for _ in range(3))
out, lse = jit.flash_attention(q, k, v, causal=True, precision="bf16", return_lse=True)
info = jit.kernel_info(path="avx512")
print(info["bf16_products"], info["bf16_route_source"], hashlib.sha256(out.tobytes() + lse.tobytes()).hexdigest(),
      sep="|")
"""


def test_two_processes_give_the_same_bf16_bits():
    """The route precision="bf16" takes comes from the CPU's features, not a timing, so two fresh
    processes on one machine run the same kernel and return the same bits (the ways differ in
    their float32 summation order)."""
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key != "ATTNCORE_JIT_BF16_ROUTE"}
    runs = [subprocess.run([sys.executable, "-c", BF16_IN_A_PROCESS], capture_output=True, text=True, env=env,
                           timeout=600, check=True).stdout.strip().split("|") for _ in range(2)]
    assert runs[0] == runs[1]
    route, source, _ = runs[0]
    assert source == "cpu features"
    assert route == ("amx" if jit.amx.available() else "native" if NATIVE else "emulated")
