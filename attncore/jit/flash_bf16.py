"""The flash block with native bfloat16 products (vdpbf16ps): _flash_block_bf16, the twin of
flash.py's _flash_block for a TileShape with bf16 == "native" (read that one first, and
bf16.py for what is rounded).

What changes: the operands of both products are packed as 32-bit words of two bf16, the
reduction running over pairs. Per block, the panel's queries (unscaled: the scale
multiplies S after the sum) as qT words (d/2, nr); per key tile, once for all the
block's panels, its keys as words (keys, d/2) and its values transposed, as words
(d_v, keys/2); per panel and tile, the rounded weights as words (keys/2, nr).
q, k and v arrive in float32 as the caller gave them: packing rounds them (bf16._pair).
"""
import numpy as np

from .bf16 import _pack_columns, _pack_pairs, _pack_panel, _pack_rows
from .compiling import _jit
from .isa import _tile_cols, _tile_rows
from .layout import _finish_rows, _mask_panel, _panel_keys, _round_up
from .microkernels import PRODUCT_MAX, PRODUCT_RESCALE, PRODUCT_ZERO, _dot, _softmax_tile
from .transpose import _transpose


@_jit
def _flash_block_bf16(queries, k, v, q0, q1, outputs, lses, settings, shape):
    """Queries q0:q1 of queries (T_q, d) -> the same rows of outputs (T_q, d_v) and lses (T_q,),
    as _flash_block, with bf16 products of q, k and v (float32, rounded as they are packed); k is
    zero-padded as for _flash_block; v (T, d_vp)."""
    t_k, scale, block_k = settings.t_k, settings.scale, settings.block_k
    causal, offset = settings.causal, settings.offset
    q, out, lse = queries[q0:q1], outputs[q0:q1], lses[q0:q1]
    rows, d = q.shape[0], q.shape[1]
    mr, nr = _tile_rows(shape), _tile_cols(shape, q)
    d_vp = v.shape[1]
    dw = (d + 1) // 2  # words of bf16 pairs along d
    panels = (rows + nr - 1) // nr
    q_w = np.zeros((panels, dw, nr), np.uint32)  # queries, transposed and paired along d, panel by panel
    acc_t = np.zeros((panels, d_vp, nr), np.float32)
    m = np.full((panels, nr), -np.inf, np.float32)
    l = np.zeros((panels, nr), np.float32)
    tile = _round_up(min(block_k, t_k), mr)
    s_t = np.empty((tile, nr), np.float32)
    k_w = np.empty((tile, dw), np.uint32)  # a tile's keys, paired along d
    v_w = np.zeros((d_vp, tile // 2 + 1), np.uint32)  # a tile's values, transposed, paired along keys
    p_w = np.empty((tile // 2 + 1, nr), np.uint32)  # a panel's weights, paired along keys
    shift = np.empty(nr, np.float32)
    alpha = np.empty(nr, np.float32)
    q_pairs = np.empty((nr, dw), np.uint32)
    for p in range(panels):
        _pack_panel(q, p, q_pairs)
        _transpose(q_pairs, q_w[p], nr, dw, shape)
    k_end = t_k if not causal else max(0, min(t_k, q0 + rows + offset))
    for k0 in range(0, k_end, block_k):
        n_tile = min(block_k, t_k - k0)
        n_tile_pad = _round_up(n_tile, mr)
        _pack_rows(k, k0, n_tile_pad, k_w)  # k is zero-padded past t_k (layout.py)
        _pack_columns(v, k0, n_tile, v_w, shape)
        for p in range(panels):
            j0 = p * nr
            n, n_pad, masked = _panel_keys(n_tile, k0, q0, j0, nr, rows, mr, causal, offset, 1)
            if n <= 0:
                continue
            acc_p = acc_t[p]
            shift[:] = m[p]
            mode = PRODUCT_ZERO if masked else PRODUCT_MAX
            for r0 in range(0, n_pad, mr):
                _dot(k_w, r0, 0, q_w[p], s_t, r0, dw, shift, scale, mode, shape)
            if masked:
                _mask_panel(s_t, n, n_pad, k0, q0, j0, causal, offset, 1)
            _softmax_tile(s_t, n_pad, n_pad if masked else 0, m[p], l[p], shift, alpha, shape)
            # with n odd, the last word pairs key n - 1 with a weight 0 (and v_w with key n, finite, or 0)
            _pack_pairs(s_t, n, p_w)
            for r0 in range(0, d_vp, mr):
                _dot(v_w, r0, 0, p_w, acc_p, r0, (n + 1) // 2, alpha, scale, PRODUCT_RESCALE, shape)
    _finish_rows(acc_t, m, l, out, lse, shape)
