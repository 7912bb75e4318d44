"""Input validation shared by every layer: clear errors instead of silent NaN.

Each check names the argument, what it got and what it needs, so a learner
reading the message knows which array to fix.
"""
import numbers

import numpy as np


def as_float_array(name, x, *, allow_neg_inf=False, check_finite=True):
    """Return x as a floating ndarray; reject integers, NaN and +-inf.

    With allow_neg_inf, -inf entries pass: they are how additive masks
    write "this key is blocked" into a score array. check_finite=False: the
    caller finds NaN and inf itself (attncore.jit's kernel does, on every thread).
    A finite x costs one isfinite pass; the bad entry is looked for only if there is one.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(
            f"{name} must be a floating-point array (float16, float32 or float64), "
            f"got dtype {x.dtype} with shape {x.shape}; convert it with {name}.astype(np.float32)"
        )
    if not check_finite or np.isfinite(x).all():
        return x
    bad = np.isnan(x) | (np.isinf(x) & ~(allow_neg_inf & (x < 0)))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        allowed = "finite or -inf" if allow_neg_inf else "finite"
        raise ValueError(
            f"{name} must be {allowed}, got {x[where]} at index {where} "
            f"(array shape {x.shape})"
        )
    return x


def require_ndim(name, x, ndim, layout):
    """Require at least ndim dimensions, described by layout, e.g. '(..., T_q, d_k)'."""
    if x.ndim < ndim:
        raise ValueError(f"{name} must have shape {layout}, got shape {x.shape}")


def as_mask(mask, target_shape, *, name="mask"):
    """Return a boolean mask broadcast to target_shape (True = may attend)."""
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(
            f"{name} must be a boolean array (True = this query may attend to this key), "
            f"got dtype {mask.dtype} with shape {mask.shape}; for an additive 0/-inf mask "
            f"add it to the scores instead, or convert it with {name} == 0"
        )
    try:
        return np.broadcast_to(mask, target_shape)
    except ValueError:
        raise ValueError(
            f"{name} with shape {mask.shape} does not broadcast to the scores, "
            f"shape {tuple(target_shape)} = (..., T_q, T_k)"
        ) from None


def positive_int(name, value, *, minimum=1):
    """Return value as an int, requiring an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def resolve_scale(scale, d_k):
    """The softmax scale: 1/sqrt(d_k) by default, else a positive finite number."""
    if scale is None:
        return 1.0 / np.sqrt(d_k)
    if isinstance(scale, bool) or not (isinstance(scale, numbers.Real) and np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    return float(scale)


def check_qk(q, k, *, check_finite=True):
    """Validate q (..., T_q, d_k) and k (..., T_k, d_k); return them as float arrays."""
    q = as_float_array("q", q, check_finite=check_finite)
    k = as_float_array("k", k, check_finite=check_finite)
    require_ndim("q", q, 2, "(..., T_q, d_k)")
    require_ndim("k", k, 2, "(..., T_k, d_k)")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share d_k (the last axis): q has shape {q.shape}, "
            f"k has shape {k.shape}"
        )
    if q.shape[-1] == 0:
        raise ValueError(f"q and k need d_k >= 1 (the last axis), got q {q.shape}, k {k.shape}")
    return q, k


def check_qkv(q, k, v, *, check_finite=True):
    """Validate q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v).

    Returns the three arrays; leading dimensions are checked by leading_shape.
    """
    q, k = check_qk(q, k, check_finite=check_finite)
    v = as_float_array("v", v, check_finite=check_finite)
    require_ndim("v", v, 2, "(..., T_k, d_v)")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must share T_k (the second-to-last axis): k has shape {k.shape}, "
            f"v has shape {v.shape}"
        )
    return q, k, v


def leading_shape(**arrays):
    """Broadcast the leading (batch, head) dimensions of arrays shaped (..., T, d)."""
    try:
        return np.broadcast_shapes(*(a.shape[:-2] for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{n} {a.shape}" for n, a in arrays.items())
        raise ValueError(
            f"the leading (batch, head) dimensions must broadcast, got {shapes}"
        ) from None
