"""Input validation shared by every layer: clear errors instead of silent NaN.

Each check names the argument, what it got and what it needs, so a learner
reading the message knows which array to fix.

prepare_attention is the front door of every attention implementation (attention,
grouped-query attention, flash_attention, weights_from_lse, attncore.jit): it checks a
call once and resolves it into a Prepared. Every entry point takes the same keyword tail
after q, k, v (mask, causal, window, scale, enable_gqa), and old_positional keeps the old
positional forms working for one release, with a DeprecationWarning. Beside it live the
facts they share, each stated once: the causal offset (causal_offset, also behind
masks.causal) and its predicate, the window's rule (resolve_window), the -inf guard
(finite_or_zero), the kv-head divisibility (kv_groups), the compute dtype and the score
product with its overflow error (scores).

Type names used across attncore: FloatArray (a floating ndarray), BoolArray (a boolean
mask), Alignment (the two readings of a rectangular causal mask) and Causal (what a
causal= argument takes).
"""
from __future__ import annotations

import math
import numbers
import sys
import warnings
from typing import Any, Callable, Literal, NamedTuple, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

FloatArray = NDArray[np.floating]
BoolArray = NDArray[np.bool_]
Alignment = Literal["top_left", "bottom_right"]
Causal = Union[bool, Alignment]  # False, True (square only), or an alignment


def old_positional(function: Callable[..., Any], given: tuple[Any, ...], **keywords: Any) -> tuple[Any, ...]:
    """The keyword-only arguments of a call of `function` that also used the old positional
    form: keywords (name=value as the call gave them, in their old positional order) with
    the positional values `given` put in their place, and a DeprecationWarning that shows
    the new form. The old form keeps working for one release."""
    title = _public_name(function)
    if len(given) > len(keywords):
        raise TypeError(f"{title}() takes {len(keywords)} old positional arguments at most ({', '.join(keywords)}, "
                        f"now keywords only), got {len(given)} more")
    defaults = function.__kwdefaults__ or {}
    moved = dict(zip(keywords, given))
    for name in moved:
        if keywords[name] is not defaults.get(name):
            raise TypeError(f"{title}() got {name} twice: by position and as {name}=")
    warnings.warn(f"{title}: pass {', '.join(f'{name}=...' for name in moved)} by keyword; passing "
                  f"{'it' if len(moved) == 1 else 'them'} by position is deprecated and will stop working in "
                  f"the next release", DeprecationWarning, stacklevel=3)
    return tuple({**keywords, **moved}.values())


def _public_name(function: Callable[..., Any]) -> str:
    """The name a reader calls function by: attncore.softmax, attncore.masks.causal, attncore.jit.softmax
    (the first module on its module's path that holds it)."""
    parts = function.__module__.split(".")
    for i in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:i]))
        if getattr(module, function.__name__, None) is function:
            return f"{module.__name__}.{function.__name__}"
    return f"{function.__module__}.{function.__name__}"


def as_float_array(name: str, x: ArrayLike, *, allow_neg_inf: bool = False,
                   check_finite: bool = True) -> FloatArray:
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


def require_ndim(name: str, x: np.ndarray, ndim: int, layout: str) -> None:
    """Require at least ndim dimensions, described by layout, e.g. '(..., T_q, d_k)'."""
    if x.ndim < ndim:
        raise ValueError(f"{name} must have shape {layout}, got shape {x.shape}")


def as_mask(mask: ArrayLike, target_shape: tuple[int, ...], *, name: str = "mask") -> BoolArray:
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


def check_axis(axis: int, shape: tuple[int, ...], *, name: str = "x") -> int:
    """The axis of array `name` (of this shape) as an index in [0, ndim), negative axes counting
    from the end; otherwise numpy.exceptions.AxisError (a ValueError) naming axis and the array."""
    ndim = len(shape)
    if ndim == 0:
        raise np.exceptions.AxisError(
            f"{name} must have an axis to normalise along (axis={axis!r}), got a scalar; "
            f"pass np.atleast_1d({name})"
        )
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral) or not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(
            f"axis must be an integer in [-{ndim}, {ndim}) for {name} of shape {tuple(shape)}, got {axis!r}"
        )
    return int(axis) % ndim


def positive_int(name: str, value: int, *, minimum: int = 1) -> int:
    """Return value as an int, requiring an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def resolve_scale(scale: float | None, d_k: int) -> float:
    """The softmax scale: 1/sqrt(d_k) by default, else a positive finite number: a Python
    or NumPy number, or a 0-d array such as np.array(0.5)."""
    if scale is None:
        return 1.0 / np.sqrt(d_k)
    value = scale[()] if isinstance(scale, np.ndarray) and scale.ndim == 0 else scale  # 0-d: the scalar inside
    positive = isinstance(value, numbers.Real) and np.isfinite(value) and value > 0
    if isinstance(value, (bool, np.bool_)) or not positive:
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    return float(value)


def check_qk(q: ArrayLike, k: ArrayLike, *, check_finite: bool = True) -> tuple[FloatArray, FloatArray]:
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


def check_qkv(q: ArrayLike, k: ArrayLike, v: ArrayLike, *,
              check_finite: bool = True) -> tuple[FloatArray, FloatArray, FloatArray]:
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


def leading_shape(*, inner: int = 2, **arrays: np.ndarray) -> tuple[int, ...]:
    """Broadcast the leading (batch, head) dimensions of arrays shaped (..., T, d): all
    but the last `inner` axes (3 for grouped heads, (..., H, T, d), whose heads are not broadcast)."""
    try:
        return np.broadcast_shapes(*(a.shape[:-inner] for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{n} {a.shape}" for n, a in arrays.items())
        what = "(batch, head) dimensions" if inner == 2 else "(batch) dimensions before the heads"
        raise ValueError(
            f"the leading {what} must broadcast, got {shapes}"
        ) from None


# --------------------------------------------------------------- the front door of attention

ALIGNMENTS = ("top_left", "bottom_right")


def causal_offset(causal: Causal, t_q: int, t_k: int, *, name: str = "causal",
                  what: str | None = None) -> int | None:
    """The one causal rule: query i sees key j when j <= i + offset; None when not causal.

    causal: False (None), True (square only: offset 0), "top_left" (offset 0, PyTorch's
    is_causal) or "bottom_right" (offset t_k - t_q: the last query sees every key, as in
    FlashAttention and KV-cache decoding). name is the caller's argument (causal, align),
    what the thing that would be ambiguous (by default "{name}=True").
    """
    if isinstance(causal, (bool, np.bool_)):
        if not causal:
            return None
        if t_q != t_k:
            raise ValueError(
                f"{what or f'{name}=True'} is ambiguous for T_q = {t_q} != T_k = {t_k}: pass "
                f"{name}='bottom_right' (the queries are the last T_q positions: decoding, FlashAttention) "
                f"or {name}='top_left' (the first T_q positions, as torch's is_causal)"
            )
        return 0
    if not isinstance(causal, str) or causal not in ALIGNMENTS:
        raise ValueError(f"{name} must be True, False or one of {ALIGNMENTS}, got {causal!r}")
    return t_k - t_q if causal == "bottom_right" else 0


def resolve_window(window: int | None, offset: int | None) -> int | None:
    """window as a positive int, or None; it needs the diagonal that causal places (offset,
    from causal_offset: None when not causal)."""
    if window is None:
        return None
    window = positive_int("window", window)
    if offset is None:
        raise ValueError(f"window={window} needs causal: the window is the last {window} keys up to the "
                         f"diagonal, and causal (True, 'top_left' or 'bottom_right') says where the diagonal is")
    return window


def causal_allowed(rows: ArrayLike, keys: ArrayLike, offset: int, window: int | None = None) -> BoolArray:
    """The causal predicate (len(rows), len(keys)): query rows[i] may see key keys[j] when
    keys[j] <= rows[i] + offset (offset from causal_offset) and, with a sliding window, when
    keys[j] > rows[i] + offset - window too: the last `window` keys up to the diagonal."""
    last = np.asarray(rows)[:, None] + offset  # the last key each query sees
    keys = np.asarray(keys)[None, :]
    return (keys <= last) if window is None else (keys <= last) & (keys > last - window)


def finite_or_zero(m: FloatArray) -> FloatArray:
    """The one -inf guard: a row max m with -inf replaced by 0, so exp(s - m) of a row with
    no allowed key is exp(-inf) = 0, not exp(-inf - (-inf)) = NaN."""
    return np.where(np.isneginf(m), 0, m).astype(m.dtype, copy=False)


def kv_groups(n_q_heads: int, n_kv_heads: int, q_shape: tuple[int, ...] | None = None,
              k_shape: tuple[int, ...] | None = None) -> int:
    """The one divisibility rule of grouped-query attention: query heads per kv head
    (at least one kv head; no query heads is an empty result)."""
    got = (f"q has shape {q_shape} (H_q = {n_q_heads}), k has shape {k_shape} (H_kv = {n_kv_heads})"
           if q_shape is not None else f"H_q = {n_q_heads} and H_kv = {n_kv_heads}")
    if n_kv_heads < 1:
        raise ValueError(f"k must have at least one kv head (axis -3 of k) for grouped-query attention: {got}")
    if n_q_heads % n_kv_heads != 0:
        raise ValueError(f"the kv heads (axis -3 of k) must divide the query heads (axis -3 of q): {got}")
    return n_q_heads // n_kv_heads


def compute_dtype(dtype: DTypeLike) -> np.dtype:
    """The float type attention is computed in: float16 in float32 (as every fused kernel
    accumulates), the rest as given. Results are cast back to dtype."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def value_headroom(v: FloatArray, t_k: int, work: DTypeLike) -> float:
    """A power of two u such that the running sums of flash attention, sum_j p_j v_j over up
    to T_k keys with every p_j <= 1 (weights before the division by l), stay finite in work
    for v / u; 1.0 when v is far from that (NaN too: the finite check names it). Dividing by
    a power of two and multiplying the output back are exact, so the results are the same
    numbers, where attention's normalised weights @ v never overflows in the first place."""
    if v.size == 0:
        return 1.0
    return headroom(largest_magnitude(v), t_k, work)


def largest_magnitude(x: FloatArray) -> float:
    """max |x| of a non-empty array, from its max and min (no |x| temporary)."""
    return max(float(x.max()), -float(x.min()))


def headroom(v_max: float, t_k: int, work: DTypeLike) -> float:
    """value_headroom from the largest |entry| of v (a kernel that reads v finds it on the way)."""
    ratio = float(v_max) / (float(np.finfo(work).max) / 4) * max(t_k, 1)
    if not 1 <= ratio < math.inf:  # far from it, or NaN or inf in v (named by the finite check)
        return 1.0
    return 2.0 ** math.ceil(math.log2(ratio))


def scores(q: FloatArray, k: FloatArray, scale: float, allowed: ArrayLike | None = None, *,
           origin: tuple[int, ...] | None = None, rows: NDArray[np.integer] | None = None) -> FloatArray:
    """S = scale * q k^T (..., T_q, T_k) in the dtype of q and k: the one score product;
    -inf where allowed (boolean, broadcasting to S) is False.

    q and k are finite (checked by the caller), so an allowed entry that is not finite
    means a product overflowed: that raises, naming q and k, instead of giving NaN or a
    row that looks fully masked. A hidden score plays no part, so its overflow is no error.
    For the message: origin (..., i0, j0) is where this tile of scores starts, rows the
    query index of each row of q (when q is a selection of queries).
    """
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow raises below, in our words
        s = (q @ np.swapaxes(k, -1, -2)) * np.asarray(scale, dtype=np.result_type(q, k))
    if allowed is not None:
        s = np.where(allowed, s, -np.inf).astype(s.dtype, copy=False)
    if not np.isfinite(s).all():
        bad = ~np.isfinite(s) if allowed is None else ~np.isfinite(s) & allowed
        if bad.any():
            raise score_overflow(s, bad, origin, rows)
    return s


def score_overflow(s: FloatArray, bad: BoolArray, origin: tuple[int, ...] | None = None,
                   rows: NDArray[np.integer] | None = None) -> ValueError:
    """The ValueError for scores s whose entries `bad` are not finite although q and k are."""
    local = tuple(int(i) for i in np.argwhere(bad)[0])
    index = local if origin is None else (*origin[:-2], origin[-2] + local[-2], origin[-1] + local[-1])
    if rows is not None:
        index = (*index[:-2], int(rows[index[-2]]), index[-1])
    fix = "scale q or k down" if s.dtype == np.float64 else "scale q or k down, or pass them as float64"
    return ValueError(
        f"q and k are finite but their scores scale * q k^T overflow {s.dtype}: the score of query "
        f"{index[-2]} and key {index[-1]} (index {index}) is {s[local]}; {fix}"
    )


class Prepared(NamedTuple):
    """A call of attention, checked once and resolved: the private cores trust it."""

    q: FloatArray  # (..., T_q, d_k), validated, dtype as given
    k: FloatArray  # (..., T_k, d_k)
    v: FloatArray | None  # (..., T_k, d_v), or None for scores and weights alone
    batch: tuple[int, ...]  # the broadcast leading (batch, head) dimensions (with grouped: ..., H_q)
    t_q: int
    t_k: int
    d_k: int
    d_v: int | None
    dtype: np.dtype  # of the results: np.result_type(q, k, v)
    work: np.dtype  # computed in (compute_dtype)
    scale: float  # resolved: 1/sqrt(d_k) by default
    offset: int | None  # causal: query i sees key j when j <= i + offset; None if not causal
    window: int | None  # with causal: query i sees only keys j > i + offset - window too
    mask: BoolArray | None  # boolean, broadcast to (*batch, T_q, T_k), or None
    group: int  # query heads per kv head (grouped=True), else 1


def grouped_views(p: Prepared) -> tuple[FloatArray, FloatArray, FloatArray | None, BoolArray | None]:
    """q, k, v and mask of the prepared call p as the cores compute with them: with grouped
    query heads (p.group > 1) q (..., H_kv, G, T_q, d) and the mask (..., H_kv, G, T_q, T_k),
    the query heads grouped by the kv head they read, and k, v (..., H_kv, 1, T_k, d), which
    broadcast over each group: the kv heads are never copied. Otherwise as they are."""
    if p.group == 1:
        return p.q, p.k, p.v, p.mask
    h_kv = p.k.shape[-3]
    q = p.q.reshape(*p.q.shape[:-3], h_kv, p.group, p.t_q, p.d_k)
    k, v = (None if x is None else x[..., :, None, :, :] for x in (p.k, p.v))
    mask = None if p.mask is None else p.mask.reshape(*p.batch[:-1], h_kv, p.group, p.t_q, p.t_k)
    return q, k, v, mask


def prepare_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike | None = None, *, mask: ArrayLike | None = None,
                      causal: Causal = False, window: int | None = None, scale: float | None = None,
                      check_finite: bool = True, grouped: bool = False) -> Prepared:
    """The front door of every attention implementation: validate once, resolve everything.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) or None; with grouped (the
    entry points' enable_gqa=True), the heads are axis -3: q (..., H_q, T_q, d), k and v
    (..., H_kv, T_k, d), H_kv dividing H_q, never broadcast, and the mask broadcasts to
    (..., H_q, T_q, T_k). check_finite=False leaves NaN and inf to the caller
    (attncore.jit's kernel finds them). Every error names the caller's argument (q, k, v,
    mask, causal, window, scale) and the shapes. Returns a Prepared.

    Raises
    ------
    ValueError
        If q, k or v is not a floating-point array, holds NaN or inf (unless
        check_finite=False) or has too few dimensions; if q and k differ in d_k or k and v
        in T_k; if the leading dimensions do not broadcast; if mask is not boolean or does
        not broadcast to the scores; if causal=True with T_q != T_k, or causal is not one of
        False, True, "top_left", "bottom_right"; if window is not a positive integer or is
        given without causal; if scale is not a positive finite number; with grouped, if k
        has no kv head or the kv heads do not divide the query heads.

    Examples
    --------
    >>> from attncore._checks import prepare_attention
    >>> q, k, v = np.ones((2, 3, 4)), np.ones((5, 4)), np.ones((5, 6))
    >>> p = prepare_attention(q, k, v, causal="bottom_right")
    >>> p.batch, p.t_q, p.t_k, p.d_k, p.d_v
    ((2,), 3, 5, 4, 6)
    >>> float(p.scale), p.offset  # 1 / sqrt(d_k); query i sees key j when j <= i + 2
    (0.5, 2)
    >>> prepare_attention(q, k, v, causal=True)
    Traceback (most recent call last):
    ...
    ValueError: causal=True is ambiguous for T_q = 3 != T_k = 5: pass causal='bottom_right' ...
    """
    if v is None:
        q, k = check_qk(q, k, check_finite=check_finite)
        arrays = {"q": q, "k": k}
    else:
        q, k, v = check_qkv(q, k, v, check_finite=check_finite)
        arrays = {"q": q, "k": k, "v": v}
    t_q, t_k, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    group = 1
    if grouped:
        require_ndim("q", q, 3, "(..., H_q, T_q, d)")
        require_ndim("k", k, 3, "(..., H_kv, T_k, d)")
        if v is not None:
            require_ndim("v", v, 3, "(..., H_kv, T_k, d_v)")
            if k.shape[-3] != v.shape[-3]:
                raise ValueError(
                    f"k and v must have the same number of kv heads (axis -3): k has shape "
                    f"{k.shape}, v has shape {v.shape}"
                )
        group = kv_groups(q.shape[-3], k.shape[-3], q.shape, k.shape)
        batch = (*leading_shape(inner=3, **arrays), q.shape[-3])
    else:
        batch = leading_shape(**arrays)
    offset = causal_offset(causal, t_q, t_k)
    window = resolve_window(window, offset)
    scale = resolve_scale(scale, d_k)
    if mask is not None:
        mask = as_mask(mask, (*batch, t_q, t_k))
    dtype = np.result_type(*arrays.values())
    return Prepared(q, k, v, tuple(batch), t_q, t_k, d_k, None if v is None else v.shape[-1], dtype,
                    compute_dtype(dtype), scale, offset, window, mask, group)
