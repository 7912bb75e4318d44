"""Random inputs shared by the test files: Hypothesis strategies and seeded q, k, v."""
import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import strategies as st

dtypes = st.sampled_from([np.float32, np.float64])


def finite(dtype, bound):
    """Finite floats of dtype in [-bound, bound]."""
    width = 32 if dtype == np.float32 else 64
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=width)


def score_arrays(dtype, bound=1e4, max_dims=3, max_side=8):
    """Arrays of finite scores of the given dtype, every dimension >= 1."""
    return hnp.arrays(
        dtype,
        hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=max_side),
        elements=finite(dtype, bound),
    )


def _qkv_arrays(draw, dtype, t_q, t_k, d_k, d_v, bound):
    """q (t_q, d_k), k (t_k, d_k), v (t_k, d_v) of dtype, entries in [-bound, bound], drawn in that order."""
    elements = finite(dtype, bound)
    return tuple(draw(hnp.arrays(dtype, shape, elements=elements)) for shape in ((t_q, d_k), (t_k, d_k), (t_k, d_v)))


@st.composite
def qkv_problems(draw, max_t=7, max_d=5, masked=True, bound=3.0):
    """(q, k, v, mask) for one head: q (T_q, d_k), k (T_k, d_k), v (T_k, d_v), mask or None."""
    dtype = draw(dtypes)
    t_q, t_k = draw(st.integers(1, max_t)), draw(st.integers(1, max_t))
    d_k, d_v = draw(st.integers(1, max_d)), draw(st.integers(1, max_d))
    q, k, v = _qkv_arrays(draw, dtype, t_q, t_k, d_k, d_v, bound)
    mask = draw(st.none() | hnp.arrays(np.bool_, (t_q, t_k))) if masked else None
    return q, k, v, mask


@st.composite
def flash_problems(draw, bound=3.0):
    """(q, k, v, causal, block_q, block_k): one head of up to 12 queries and keys, d_v = 2,
    a causal option valid for the shape and tile sizes up to 14."""
    dtype = draw(dtypes)
    t_q, t_k = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    causal = draw(st.sampled_from([False, "top_left", "bottom_right"] + ([True] if t_q == t_k else [])))
    d = draw(st.integers(1, 6))
    q, k, v = _qkv_arrays(draw, dtype, t_q, t_k, d, 2, bound)
    block_q, block_k = draw(st.integers(1, 14)), draw(st.integers(1, 14))
    return q, k, v, causal, block_q, block_k


def random_qkv(rng, dtype, q_shape, k_shape, v_shape, bound=2.0):
    """q, k, v of the given shapes and dtype, uniform in [-bound, bound], drawn from rng in that order."""
    return tuple(rng.uniform(-bound, bound, size=shape).astype(dtype) for shape in (q_shape, k_shape, v_shape))
