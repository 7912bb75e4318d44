"""Boolean attention masks: True means "this query may attend to this key".

This is the convention of PyTorch's scaled_dot_product_attention. Masks have
shape (T_q, T_k) (rows are queries, columns are keys) or broadcast to the
scores (..., T_q, T_k). `to_additive` converts to the 0 / -inf form.
"""
from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ._checks import BoolArray, Causal, FloatArray, causal_offset, positive_int


def causal(t_q: int, t_k: int | None = None, *, causal: Causal = True, align: Causal | None = None) -> BoolArray:
    """Causal mask (t_q, t_k): query i sees key j when j <= i + offset.

    causal names the alignment as every attention function's causal= does. True (the
    default) is the square mask (t_k omitted or equal): the lower triangle, offset 0.
    Rectangular shapes have two readings and the caller must choose one: "top_left"
    (offset 0, PyTorch's is_causal) or "bottom_right" (offset t_k - t_q: the last query sees
    every key, as in FlashAttention and KV-cache decoding). align: the old name of causal,
    deprecated (it works for one release).

    Raises
    ------
    ValueError
        If t_q or t_k is not a positive integer; if causal is not True, "top_left" or
        "bottom_right"; if t_q != t_k and causal is True.

    Examples
    --------
    >>> from attncore import masks
    >>> masks.causal(3).astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    >>> masks.causal(2, 4, causal="bottom_right").astype(int).tolist()  # the last query sees every key
    [[1, 1, 1, 0], [1, 1, 1, 1]]
    >>> masks.causal(2, 4, causal="top_left").astype(int).tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0]]
    >>> masks.causal(2, 4)
    Traceback (most recent call last):
    ...
    ValueError: a causal mask of shape (t_q, t_k) = (2, 4) is ambiguous for T_q = 2 != T_k = 4: ...
    """
    if align is not None:
        warnings.warn("attncore.masks.causal: align= is now called causal= (as in every attention function); "
                      "align= is deprecated and will stop working in the next release", DeprecationWarning,
                      stacklevel=2)
        causal = align
    t_q = positive_int("t_q", t_q)
    t_k = t_q if t_k is None else positive_int("t_k", t_k)
    if causal is False or isinstance(causal, np.bool_) and not causal:
        raise ValueError("causal=False asks masks.causal for no causal mask; pass True, 'top_left' or "
                         "'bottom_right', or use np.ones((t_q, t_k), bool) for a mask that allows every key")
    offset = causal_offset(causal, t_q, t_k, what=f"a causal mask of shape (t_q, t_k) = ({t_q}, {t_k})")
    return np.tri(t_q, t_k, k=offset, dtype=bool)


def key_padding(lengths: ArrayLike, t_k: int) -> BoolArray:
    """Mask (B, 1, t_k) that hides padded keys: batch b sees keys j < lengths[b].

    The singleton query axis broadcasts over every query of the sequence; add an
    axis, mask[:, None], to broadcast over heads in (B, H, T_q, T_k).

    Raises
    ------
    ValueError
        If t_k is not a positive integer; if lengths is not a 1-D integer array or a
        length lies outside [0, t_k].

    Examples
    --------
    >>> from attncore import masks
    >>> m = masks.key_padding([3, 1], 4)
    >>> m.shape
    (2, 1, 4)
    >>> m[:, 0].astype(int).tolist()
    [[1, 1, 1, 0], [1, 0, 0, 0]]
    """
    t_k = positive_int("t_k", t_k)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(
            f"lengths must be a 1-D integer array of shape (B,), got dtype "
            f"{lengths.dtype} with shape {lengths.shape}"
        )
    if np.any((lengths < 0) | (lengths > t_k)):
        raise ValueError(f"every length must lie in [0, t_k={t_k}], got {lengths.tolist()}")
    return (np.arange(t_k) < lengths[:, None])[:, None, :]


def sliding_window(t: int, window: int) -> BoolArray:
    """Causal sliding window (t, t): query i sees keys i - window < j <= i (Mistral).

    Raises
    ------
    ValueError
        If t or window is not a positive integer.

    Examples
    --------
    >>> from attncore import masks
    >>> masks.sliding_window(4, 2).astype(int).tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    """
    t = positive_int("t", t)
    window = positive_int("window", window)
    i, j = np.indices((t, t))
    return (j <= i) & (j > i - window)


def sink_window(t: int, n_sink: int, window: int) -> BoolArray:
    """StreamingLLM (t, t): the first n_sink keys plus a causal window of `window` keys.

    Raises
    ------
    ValueError
        If t or window is not a positive integer, or n_sink not an integer >= 0.

    Examples
    --------
    >>> from attncore import masks
    >>> masks.sink_window(5, 1, 2).astype(int).tolist()
    [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [1, 0, 0, 1, 1]]
    """
    t = positive_int("t", t)
    n_sink = positive_int("n_sink", n_sink, minimum=0)
    sinks = np.arange(t) < n_sink
    return sliding_window(t, window) | (causal(t) & sinks[None, :])


def block_diagonal(segment_ids: ArrayLike) -> BoolArray:
    """Packed sequences: (..., T) segment ids -> (..., T, T), True where ids match.

    Combine with causal(T) with `&` for packed causal language modelling.

    Raises
    ------
    ValueError
        If segment_ids is not an integer array with at least one axis.

    Examples
    --------
    >>> from attncore import masks
    >>> (masks.block_diagonal([0, 0, 1]) & masks.causal(3)).astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    """
    segment_ids = np.asarray(segment_ids)
    if segment_ids.ndim < 1 or not np.issubdtype(segment_ids.dtype, np.integer):
        raise ValueError(
            f"segment_ids must be an integer array of shape (..., T), got dtype "
            f"{segment_ids.dtype} with shape {segment_ids.shape}"
        )
    return segment_ids[..., :, None] == segment_ids[..., None, :]


def to_additive(mask: ArrayLike, dtype: DTypeLike = np.float32) -> FloatArray:
    """Boolean mask -> additive mask of the given dtype: 0 where True, -inf where False.

    Raises
    ------
    ValueError
        If mask is not boolean.

    Examples
    --------
    >>> from attncore import masks
    >>> masks.to_additive(masks.causal(2)).tolist()
    [[0.0, -inf], [0.0, 0.0]]
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be boolean, got dtype {mask.dtype} with shape {mask.shape}")
    return np.where(mask, 0, -np.inf).astype(dtype)
